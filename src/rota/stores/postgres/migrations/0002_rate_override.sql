-- A key's rate set at run time (Store.set_rate), in place of its jobs' own.
ALTER TABLE limits ADD COLUMN rate_override double precision;
