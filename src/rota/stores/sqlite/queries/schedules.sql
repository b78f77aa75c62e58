-- Schedules in the SQL engine on SQLite (rota.stores.sql.schedules).
-- Each query follows a "-- name: NAME" line.

-- name: all_schedules
SELECT name, task, trigger, payload, next_fire, enabled, misfire, grace, overlap, jitter,
       job_options, last_fire, last_job_id, skipped
FROM schedules ORDER BY name

-- name: get_schedule
SELECT name, task, trigger, payload, next_fire, enabled, misfire, grace, overlap, jitter,
       job_options, last_fire, last_job_id, skipped
FROM schedules WHERE name = ?

-- name: schedule_trigger
SELECT trigger FROM schedules WHERE name = ?

-- name: insert_schedule
INSERT INTO schedules (name, trigger, next_fire, enabled, task, payload, misfire, grace,
                       overlap, jitter, job_options, last_fire, last_job_id, skipped)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, 0)

-- name: update_schedule_trigger
UPDATE schedules SET task = ?, payload = ?, misfire = ?, grace = ?, overlap = ?, jitter = ?,
    job_options = ?, trigger = ?, next_fire = ?
WHERE name = ?

-- name: update_schedule
UPDATE schedules SET task = ?, payload = ?, misfire = ?, grace = ?, overlap = ?, jitter = ?,
    job_options = ?
WHERE name = ?

-- name: delete_schedule
DELETE FROM schedules WHERE name = ?

-- name: enable_schedule
UPDATE schedules SET enabled = ? WHERE name = ?

-- name: schedule_for_fire
SELECT next_fire, overlap, last_job_id, enabled FROM schedules WHERE name = ?

-- name: schedule_fired
UPDATE schedules SET next_fire = ?, last_fire = ? WHERE name = ?

-- name: schedule_skipped
UPDATE schedules SET skipped = skipped + 1 WHERE name = ?

-- name: schedule_last_job
UPDATE schedules SET last_job_id = ? WHERE name = ?

-- name: job_state
SELECT state FROM jobs WHERE id = ?

-- name: bump_schedules_version
UPDATE meta SET value = value + 1 WHERE key = 'schedules_version'

-- name: schedules_version
SELECT value FROM meta WHERE key = 'schedules_version'

-- name: lock_schedule
-- Write transactions run one at a time on SQLite: nothing more to lock.
SELECT ?
