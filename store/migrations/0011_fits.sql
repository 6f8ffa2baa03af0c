-- A run's fit, made in the background when the run is written, so that a
-- restart answers without refitting: what the fit chose (the calculator
-- rebuilds the model from it and the run's cells), the run's capability
-- summary (what the planner and the predicted leaderboard bound every run
-- by, refining only the few that can win), or why the run cannot be
-- modelled. method is the calculator's method version: a fit of another
-- version is made again when next needed. About 2 KB a run.
CREATE TABLE run_fits (
    run_id    TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    method    TEXT NOT NULL,
    params    BLOB,
    summary   BLOB,
    refusal   TEXT,
    fitted_at TEXT NOT NULL,
    CHECK ((params IS NULL) = (refusal IS NOT NULL))
);
