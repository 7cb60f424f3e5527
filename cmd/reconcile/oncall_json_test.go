package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reconcile"
	"reconcile/ledgerdb/ledgerdbtest"
)

// `show --json FILE` and `escalations --json FILE` write snake_case JSON,
// with null for a time not set (they once printed Go's field names and
// 0001-01-01), to a file or (-) to stdout, and never over a file that is
// not theirs.
func TestOnCallJSONIsSnakeCaseWithNullTimes(t *testing.T) {
	h := newHostile(t, ledgerdbtest.New(t, "sqlite"))
	pi, _ := h.charge("a", "shop:charge:a", 1000)
	h.effect("shop:charge:a", "charge", reconcile.StatusAttempted, pi, dayAgo, chargeReq("shop:charge:a", 1000))
	code, out, errOut := reconcileCmd(t, "show", "shop:charge:a", "--json", "-", "--ledger", h.l.URL)
	if code != 0 {
		t.Fatalf("show --json - exited %d: %s", code, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show --json - is not JSON alone: %v\n%s", err, out)
	}
	effect, _ := v["effect"].(map[string]any)
	if effect["key"] != "shop:charge:a" || effect["external_id"] != pi || effect["confirmed_at"] != nil || effect["created_at"] == nil {
		t.Errorf("effect = %v, want snake_case keys and confirmed_at null", effect)
	}
	if strings.Contains(out, "0001-01-01") || strings.Contains(out, `"ExternalID"`) {
		t.Errorf("show --json has Go field names or zero times:\n%s", out)
	}
	path := filepath.Join(t.TempDir(), "escalations.json")
	if code, _, errOut := reconcileCmd(t, "escalations", "--json", path, "--ledger", h.l.URL); code != 0 {
		t.Fatalf("escalations --json FILE exited %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "{\n  \"escalations\": [") {
		t.Errorf("escalations --json FILE wrote %q", b)
	}
	notes := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notes, []byte("keep me"), 0o644)
	if code, _, _ := reconcileCmd(t, "show", "shop:charge:a", "--json", notes, "--ledger", h.l.URL); code != exitUsage {
		t.Errorf("show --json over a file that is not its own = exit %d, want %d", code, exitUsage)
	}
}
