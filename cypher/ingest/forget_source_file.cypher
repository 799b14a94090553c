// Forget a passage corpus file's record ($id: its file URI) before its changed passages are written, so that
// a run interrupted half-way cannot leave a record that would skip the corpus next time.
MATCH (f:SourceFile {id: $id})
DELETE f
RETURN count(*) AS forgotten
