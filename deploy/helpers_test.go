// Package deploy holds the deployment examples (crontab, systemd, Kubernetes,
// the environment file) and the tests that run them as written, with the
// getting-started commands of README.md and the examples of docs/LEDGER.md.
// The tests build the reconcile binary once and run it as a user would.
package deploy

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// root is the repository's root, seen from this package's folder.
const root = ".."

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// goCommand is the go tool: the one on PATH, else the toolchain's own.
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// reconcileBinary builds cmd/reconcile once per test process and returns
// the binary's path.
func reconcileBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "reconcile-deploy-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "reconcile")
		cmd := exec.Command(goCommand(), "build", "-o", binPath, "./cmd/reconcile")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/reconcile: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// result is what a command left: its exit status and output.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// execute runs cmd to its end (at most two minutes), with env added to a
// minimal environment of its own: nothing of the test's leaks into it.
func execute(t *testing.T, cmd *exec.Cmd, env ...string) result {
	t.Helper()
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir(), "LANG=C.UTF-8"}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", cmd.Args, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%q did not finish in two minutes:\n%s\n%s", cmd.Args, stdout.String(), stderr.String())
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// reconcile runs the binary with args.
func reconcile(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return execute(t, exec.Command(reconcileBinary(t), args...), env...)
}

// shell runs a command line with /bin/sh, as cron does.
func shell(t *testing.T, env []string, line string) result {
	t.Helper()
	return execute(t, exec.Command("/bin/sh", "-c", line), env...)
}

// replaceAll applies each old→new pair to s, failing the test when an old
// string is not in s: an example that changed must not run as something
// else unnoticed.
func replaceAll(t *testing.T, what, s string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("%s no longer holds %q:\n%s", what, pairs[i], s)
		}
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	return s
}

// readFile reads a file of the repository, relative to its root.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docBlock is the fenced code block that follows the line
// <!-- example: name --> in a Markdown file of the repository.
func docBlock(t *testing.T, path, name string) string {
	t.Helper()
	doc := readFile(t, path)
	re := regexp.MustCompile("(?s)<!-- example: " + regexp.QuoteMeta(name) + " -->\n```[a-z]*\n(.*?)```\n")
	m := re.FindAllStringSubmatch(doc, -1)
	if len(m) != 1 {
		t.Fatalf("%s has %d code blocks marked <!-- example: %s -->, want 1", path, len(m), name)
	}
	return m[0][1]
}

// pagerEvent is what a pager receiver got: a PagerDuty Events v2 body.
type pagerEvent struct {
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
}

// pager is a PagerDuty Events v2 receiver on loopback.
type pager struct {
	URL    string
	mu     sync.Mutex
	events []pagerEvent
}

func newPager(t *testing.T) *pager {
	p := &pager{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e pagerEvent
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("pager got %q: %v", body, err)
		}
		p.mu.Lock()
		p.events = append(p.events, e)
		p.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"status":"success","message":"Event processed","dedup_key":"x"}`)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL + "/v2/enqueue"
	return p
}

func (p *pager) got() []pagerEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]pagerEvent(nil), p.events...)
}

// noProvider is a provider URL that fails the test on any call: the
// deployment samples need no repair, so an example must make none.
func noProvider(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the example called the provider: %s %s", r.Method, r.URL)
		http.Error(w, "no calls expected", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// world is a SQLite ledger with the effects an application recorded and a
// folder with the provider's settlement report of them: one charge as
// recorded, one that settled at another amount (mismatched: a person is
// paged, and the run exits 3).
type world struct {
	ledger  string // sqlite:PATH
	reports string // a folder holding the report, standing in for an S3 prefix
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{ledger: "sqlite:" + filepath.Join(dir, "ledger.db"), reports: filepath.Join(dir, "reports") + "/"}
	if r := reconcile(t, nil, "migrate", "--ledger", w.ledger); r.code != 0 {
		t.Fatalf("migrate: %s", r)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, e := range []struct {
		key, pi string
		amount  int
	}{{"shop_d1:charge:0", "pi_DeployOk0001", 2500}, {"shop_d1:charge:1", "pi_DeployMoved01", 1000}} {
		req := fmt.Sprintf(`{"amount": %d, "currency": "eur", "metadata": {"effect_key": %q}}`, e.amount, e.key)
		if _, err := db.Exec(`INSERT INTO effect (key, run_id, step, provider, status, external_id, request, created_at, confirmed_at)
			VALUES (?, 'shop_d1', 'charge', 'stripe', 'confirmed', ?, ?, '2026-11-28 08:00:00', '2026-11-28 08:00:01')`, e.key, e.pi, req); err != nil {
			t.Fatal(err)
		}
	}
	report := "balance_transaction_id,created_utc,charge_id,payment_intent_id,source_id,reporting_category,currency,gross,fee,net,description,payment_metadata[effect_key]\n" +
		"txn_DeployOk0001,2026-11-28 08:00:00,ch_DeployOk0001,pi_DeployOk0001,ch_DeployOk0001,charge,eur,25.00,0.00,25.00,Order 1,shop_d1:charge:0\n" +
		"txn_DeployMoved01,2026-11-28 08:00:00,ch_DeployMoved01,pi_DeployMoved01,ch_DeployMoved01,charge,eur,15.00,0.00,15.00,Order 2,shop_d1:charge:1\n"
	if err := os.MkdirAll(w.reports, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.reports, "stripe-2026-11-28.itemized.csv"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// envFile reads an environment file as systemd and kubectl do: one
// KEY=value a line, # comments and blank lines skipped, nothing unquoted.
func envFile(t *testing.T, text string) [][2]string {
	t.Helper()
	var kv [][2]string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("env file line %d %q: want KEY=value", i+1, line)
		}
		kv = append(kv, [2]string{k, v})
	}
	return kv
}

// ctxTimeout is a context that ends with the test or after d.
func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
