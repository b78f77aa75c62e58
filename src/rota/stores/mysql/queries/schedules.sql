-- Schedules in the SQL engine on MySQL / MariaDB (rota.stores.sql.schedules).
-- Each query follows a "-- name: NAME" line.

-- name: all_schedules
SELECT name, task, `trigger`, payload, next_fire, enabled, misfire, grace, overlap, jitter,
       job_options, last_fire, last_job_id, skipped
FROM schedules ORDER BY name

-- name: get_schedule
SELECT name, task, `trigger`, payload, next_fire, enabled, misfire, grace, overlap, jitter,
       job_options, last_fire, last_job_id, skipped
FROM schedules WHERE name = %s

-- name: schedule_trigger
SELECT `trigger` FROM schedules WHERE name = %s

-- name: insert_schedule
INSERT INTO schedules (name, `trigger`, next_fire, enabled, task, payload, misfire, grace,
                       overlap, jitter, job_options, last_fire, last_job_id, skipped)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, NULL, NULL, 0)

-- name: update_schedule_trigger
UPDATE schedules SET task = %s, payload = %s, misfire = %s, grace = %s, overlap = %s,
    jitter = %s, job_options = %s, `trigger` = %s, next_fire = %s
WHERE name = %s

-- name: update_schedule
UPDATE schedules SET task = %s, payload = %s, misfire = %s, grace = %s, overlap = %s,
    jitter = %s, job_options = %s
WHERE name = %s

-- name: delete_schedule
DELETE FROM schedules WHERE name = %s

-- name: enable_schedule
-- Counts the schedule found (an UPDATE counts only the rows it changed).
SELECT 1 FROM schedules WHERE name = %s FOR UPDATE;
UPDATE schedules SET enabled = %s WHERE name = %s

-- name: schedule_for_fire
-- Locked: a racing fire waits, then reads the next_fire this one wrote.
SELECT next_fire, overlap, last_job_id, enabled FROM schedules WHERE name = %s FOR UPDATE

-- name: schedule_fired
UPDATE schedules SET next_fire = %s, last_fire = %s WHERE name = %s

-- name: schedule_skipped
UPDATE schedules SET skipped = skipped + 1 WHERE name = %s

-- name: schedule_last_job
UPDATE schedules SET last_job_id = %s WHERE name = %s

-- name: job_state
SELECT state FROM jobs WHERE id = %s

-- name: bump_schedules_version
UPDATE meta SET value = value + 1 WHERE `key` = 'schedules_version'

-- name: schedules_version
SELECT value FROM meta WHERE `key` = 'schedules_version'

-- name: lock_schedule
-- Held to the end of the transaction: definitions of schedules take turns on
-- the version row that each of them bumps anyway (the name is not needed).
SELECT value FROM meta WHERE `key` = 'schedules_version' FOR UPDATE
