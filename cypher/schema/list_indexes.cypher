// Every index with its label, properties, type and options, in the store's own columns ({{indexes}}: cypher/fragments/),
// for the vector dimension check.
{{indexes}}
