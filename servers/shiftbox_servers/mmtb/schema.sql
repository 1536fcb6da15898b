-- The mmtb domain: an imported Multi-Mission Tool Bench file's tools and annotated observations; an episode
-- records the calls it has answered (which observation each got).
CREATE TABLE tools (
    name        TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    parameters  TEXT NOT NULL            -- the record's JSON schema of the arguments, as JSON
);
CREATE TABLE observations (
    observation_id TEXT PRIMARY KEY,     -- <task id>/<mission>/<answer idx>
    position       INTEGER NOT NULL UNIQUE,  -- file order: record, mission, answer
    task_id        TEXT NOT NULL,
    mission        INTEGER NOT NULL,
    tool           TEXT NOT NULL REFERENCES tools,
    match_key      TEXT NOT NULL,        -- the gold arguments, normalized (`match_key`)
    observation    TEXT NOT NULL         -- the annotated observation, as JSON
);
CREATE INDEX observations_by_call ON observations (tool, match_key);
CREATE TABLE calls (
    call_id        INTEGER PRIMARY KEY,
    tool           TEXT NOT NULL,
    match_key      TEXT NOT NULL,
    observation_id TEXT NOT NULL REFERENCES observations
);
