-- rota SQLite schema, version 5: dashboard and API users and their tokens.
-- A token is kept only as the SHA-256 hash of its secret.

CREATE TABLE users (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE user_tokens (
    token_hash TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    label TEXT NOT NULL,
    UNIQUE (name, label)
);
