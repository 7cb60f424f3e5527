-- Who took an escalation in hand, and when.
ALTER TABLE escalation ADD COLUMN acknowledged_at timestamptz;
ALTER TABLE escalation ADD COLUMN acknowledged_by text;
