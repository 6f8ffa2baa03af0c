-- Measured power: a run's average draw per GPU and each decode cell's,
-- for the energy and cost of its answers.
ALTER TABLE runs ADD COLUMN avg_power_w double precision;
ALTER TABLE decode_cells ADD COLUMN avg_power_w double precision;
