-- Reads that must stay fast at 100,000 runs: the catalogs count from
-- covering indexes instead of scanning the runs, and the busiest filter
-- (a GPU) is walked in the order of each sort it is listed by, so a page
-- stops after its last row instead of sorting every match.
CREATE INDEX runs_catalog_gpu ON runs (gpu, vram_gb);
CREATE INDEX runs_catalog_model ON runs (model_name, coalesce(model_quantization, engine_quantization));
CREATE INDEX runs_catalog_engine ON runs (engine_name, engine_version);
CREATE INDEX runs_by_gpu_peak ON runs (gpu COLLATE NOCASE, coalesce(peak_total_tok_s, -1), id);
CREATE INDEX runs_by_gpu_created ON runs (gpu COLLATE NOCASE, created_at, id);
