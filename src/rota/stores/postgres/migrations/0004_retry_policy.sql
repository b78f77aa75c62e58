-- Each job's retry policy (NewJob.retry), claimed with it; NULL: the default.
ALTER TABLE jobs ADD COLUMN retry text;
