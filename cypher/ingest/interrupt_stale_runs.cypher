// At the start of a run, which holds the knowledge base's lock: any other run still 'running' was killed
// (kill -9, power loss) before it could record its end. It becomes 'interrupted'; finished_at stays null
// (its end is unknown) and interrupted_noticed_at / interrupted_noticed_by say when and by which run it was found.
MATCH (r:IngestionRun {status: 'running'})
WHERE r.id <> $id
SET r.status = 'interrupted', r.interrupted_noticed_at = $noticed_at, r.interrupted_noticed_by = $id
RETURN r.id AS id, r.started_at AS started_at
