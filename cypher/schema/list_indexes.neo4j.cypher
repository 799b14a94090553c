// Every index with its label, properties, type and options (vector dimension check).
SHOW INDEXES YIELD name, type, labelsOrTypes, properties, options
RETURN name, type, labelsOrTypes AS labels, properties, options
