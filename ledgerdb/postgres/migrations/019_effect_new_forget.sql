-- A run forgets the new effects listed below the horizon it leaves: no run
-- reads them from the list again, and the list would otherwise hold every
-- effect ever written (64 MB for a million). The job's role may not delete
-- from effect_new; it calls this function, which deletes as the owner and
-- only below the mark, so that a ledger upgraded needs no new grant. Any
-- role may call it: it deletes nothing that a run still reads.
CREATE FUNCTION effect_new_forget() RETURNS void LANGUAGE sql SECURITY DEFINER AS $$
  DELETE FROM effect_new WHERE xid < (SELECT horizon FROM scope_mark)
$$;
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION effect_new_forget() SET search_path = %I, pg_temp', current_schema());
END $$;
