-- 020: a topic's delivery window (quiet hours are the time outside it):
-- the days and hours of a time zone in which its jobs may be delivered,
-- e.g. "Mon-Fri 09:00-18:00 Asia/Shanghai" (docs/delivery.md, "Quiet
-- hours"). A job due outside it waits for the opening, with no attempt
-- used. "": no window, delivered at any hour, as before.
ALTER TABLE topics ADD COLUMN delivery_window TEXT NOT NULL DEFAULT '';
