-- rota SQLite schema, version 3: the audit log of operator actions.

CREATE TABLE audit (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    at      REAL NOT NULL,
    actor   TEXT NOT NULL,
    role    TEXT NOT NULL,
    origin  TEXT NOT NULL,
    address TEXT,
    action  TEXT NOT NULL,
    target  TEXT NOT NULL,
    details TEXT NOT NULL
);
CREATE INDEX audit_at ON audit (at, seq);
