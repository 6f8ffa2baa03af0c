-- Measured power: a run's average draw per GPU and each decode cell's,
-- for the energy and cost of its answers (read apart from the other run
-- columns, so that earlier migrations read runs without them).
ALTER TABLE runs ADD COLUMN avg_power_w REAL;
ALTER TABLE decode_cells ADD COLUMN avg_power_w REAL;
