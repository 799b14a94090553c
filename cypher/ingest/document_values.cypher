// The values of the properties $keys of the Document $id as [key, value] pairs (a property absent: null), read by
// key (d[key]) whether metadata_keys lists it or not: what a metadata-only re-ingest left (kbgraph.ingest.refresh).
MATCH (d:Document {id: $id})
RETURN [k IN $keys | [k, d[k]]] AS values
