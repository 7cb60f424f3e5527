package deploy

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// The demo writes the finance workbook after each round, and names both
// among its files; README.md names every file it writes.
func TestDemoWritesTheWorkbookOfBothRounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := reconcile(t, nil, "demo", "--dir", dir)
	if r.code != 0 {
		t.Fatalf("demo: %s", r)
	}
	for _, name := range []string{"discrepancies.xlsx", "discrepancies-round-2.xlsx"} {
		path := filepath.Join(dir, name)
		f, err := excelize.OpenFile(path)
		if err != nil {
			t.Errorf("demo left no readable %s: %v", name, err)
			continue
		}
		f.Close()
		if !strings.Contains(r.stdout, "  "+path+"\n") {
			t.Errorf("demo output does not list %s:\n%s", path, r.stdout)
		}
		if !strings.Contains(r.stdout, "--xlsx "+path+" ") {
			t.Errorf("demo output shows no run writing %s:\n%s", path, r.stdout)
		}
	}
	readmeNamesFiles(t, dir)
}

// keptDemo is a running `reconcile demo --keep` and what it printed.
type keptDemo struct {
	cmd   *exec.Cmd
	lines []string
	done  chan error
}

// startKeptDemo starts the demo with --keep and reads its output up to the
// line that says how to stop it.
func startKeptDemo(t *testing.T, dir string) *keptDemo {
	t.Helper()
	cmd := exec.Command(reconcileBinary(t), "demo", "--keep", "--dir", dir)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &keptDemo{cmd: cmd, done: make(chan error, 1)}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		d.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			for range lines {
			}
		}
	})
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("demo --keep ended before saying how to stop it:\n%s\n%s", strings.Join(d.lines, "\n"), stderr.String())
			}
			d.lines = append(d.lines, line)
			if strings.Contains(line, "Ctrl-C") {
				go func() {
					for range lines { // the demo may print more; keep it from blocking
					}
				}()
				return d
			}
		case <-deadline:
			t.Fatalf("demo --keep printed no Ctrl-C line in two minutes:\n%s\n%s", strings.Join(d.lines, "\n"), stderr.String())
		}
	}
}

// command is the printed command line that contains every one of words
// and not without (unless it is empty).
func (d *keptDemo) command(t *testing.T, without string, words ...string) string {
	t.Helper()
	var found []string
	for _, line := range d.lines {
		line = strings.TrimSpace(line)
		if !strings.Contains(line, "go run ./cmd/reconcile ") || (without != "" && strings.Contains(line, without)) {
			continue
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			found = append(found, line)
		}
	}
	if len(found) != 1 {
		t.Fatalf("demo --keep printed %d commands with %q, want 1:\n%s", len(found), words, strings.Join(d.lines, "\n"))
	}
	return found[0]
}

// `reconcile demo --keep` leaves the sandbox running on a ledger with a new
// day's effects and prints the three uses as commands that work as
// printed: the ad hoc run plans the repairs, the nightly run makes them,
// the export writes a workbook; README.md names the files they leave;
// Ctrl-C stops it.
func TestDemoKeepLeavesASandboxToTryTheThreeUses(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a demo") // the printed commands quote what needs quoting
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := startKeptDemo(t, dir)
	bin := reconcileBinary(t)
	asPrinted := func(line string) result {
		t.Helper()
		return shell(t, nil, strings.Replace(line, "go run ./cmd/reconcile", bin, 1))
	}

	adhoc := d.command(t, "--apply", " run ", "stripe-day-3.itemized.csv")
	r := asPrinted(adhoc)
	if r.code != 0 || !strings.Contains(r.stdout, "planned    compensate") || !strings.Contains(r.stdout, "planned    redeliver") {
		t.Fatalf("the ad hoc run as printed (%s): %s; want exit 0 and planned refunds and redeliveries", adhoc, r)
	}

	nightly := d.command(t, "", " run --apply ", "--provider-url", "stripe-day-3.itemized.csv")
	r = asPrinted(nightly)
	if r.code != 0 || !strings.Contains(r.stdout, "applied    compensate") || !strings.Contains(r.stdout, "applied    redeliver") {
		t.Fatalf("the nightly run as printed (%s): %s; want exit 0 and the repairs applied", nightly, r)
	}
	if xlsx := flagValue(nightly, "--xlsx"); xlsx == "" {
		t.Errorf("the nightly run writes no workbook: %s", nightly)
	} else if _, err := os.Stat(xlsx); err != nil {
		t.Errorf("the nightly run wrote no %s: %v", xlsx, err)
	}
	if r := asPrinted(nightly); r.code != 0 || strings.Contains(r.stdout, "applied ") {
		t.Errorf("the nightly run again: %s; want nothing left to apply", r)
	}

	export := d.command(t, "", " export --run ")
	r = asPrinted(export)
	xlsx := flagValue(export, "--xlsx")
	if r.code != 0 || xlsx == "" {
		t.Fatalf("the export as printed (%s): %s", export, r)
	}
	if f, err := excelize.OpenFile(xlsx); err != nil {
		t.Errorf("the export wrote no readable workbook %s: %v", xlsx, err)
	} else {
		f.Close()
	}

	readmeNamesFiles(t, dir)

	provider := flagValue(nightly, "--provider-url")
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("demo --keep after Ctrl-C: %v, want exit 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo --keep did not stop within 30s of SIGINT")
	}
	if resp, err := http.Get(provider + "/_sandbox/export/itemized"); err == nil {
		resp.Body.Close()
		t.Errorf("the sandbox still answers at %s after the demo stopped", provider)
	}
}

// flagValue is the value of flag in a printed command line, unquoted, or
// "" when the line has none.
func flagValue(line, flag string) string {
	m := regexp.MustCompile(regexp.QuoteMeta(flag) + ` ('[^']*'|\S+)`).FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], "'")
}
