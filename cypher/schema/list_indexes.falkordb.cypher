// Every index with its label, properties, types and options (vector dimension check).
CALL db.indexes() YIELD label, properties, types, options
RETURN label, properties, types, options
