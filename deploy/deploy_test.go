package deploy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/robfig/cron/v3"
)

// The host paths of the examples, and the pager's and the inputs' URLs: a
// test maps each to a place of its own, and fails if an example no longer
// holds it.
const (
	hostBinary  = "/usr/local/bin/reconcile"
	hostEnvFile = "/etc/reconcile/env"
	hostState   = "/var/lib/reconcile/"
	hostMetrics = "/var/lib/node_exporter/textfile_collector/"
	hostLog     = "/var/log/reconcile/"
	pagerURL    = "https://events.pagerduty.com/v2/enqueue"
	inputURL    = "s3://finance-reports/stripe/"
)

// site is the places the examples' host paths map to in a test, and the
// world they run against.
type site struct {
	w                             *world
	pager                         *pager
	envFile, state, metrics, logs string
	provider                      string
}

func newSite(t *testing.T) *site {
	t.Helper()
	dir := t.TempDir()
	s := &site{w: newWorld(t), pager: newPager(t), envFile: filepath.Join(dir, "env"), provider: noProvider(t),
		state: filepath.Join(dir, "state") + "/", metrics: filepath.Join(dir, "metrics") + "/", logs: filepath.Join(dir, "log") + "/"}
	for _, d := range []string{s.state, s.metrics, s.logs} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	// The example environment file with the test's values; the provider is
	// one that fails the test when called, since the world needs no repair.
	var env strings.Builder
	for _, kv := range s.env(t) {
		env.WriteString(kv + "\n")
	}
	if err := os.WriteFile(s.envFile, []byte(env.String()), 0o400); err != nil {
		t.Fatal(err)
	}
	return s
}

// env is the example environment file's settings with the test's values.
func (s *site) env(t *testing.T) []string {
	t.Helper()
	values := map[string]string{"RECONCILE_LEDGER": s.w.ledger, "STRIPE_API_KEY": "sk_test_deploy", "RECONCILE_PAGER_ROUTING_KEY": "R0deploytest"}
	var env []string
	for _, kv := range envFile(t, readFile(t, "deploy/reconcile.env.example")) {
		if v, ok := values[kv[0]]; ok {
			kv[1] = v
		}
		env = append(env, kv[0]+"="+kv[1])
	}
	return append(env, "RECONCILE_STRIPE_URL="+s.provider)
}

// mapPaths maps an example's host paths and URLs onto the site.
func (s *site) mapPaths(t *testing.T, what, text string) string {
	t.Helper()
	text = replaceAll(t, what, text, hostBinary, reconcileBinary(t), hostState, s.state, hostMetrics, s.metrics, pagerURL, s.pager.URL, inputURL, s.w.reports)
	text = strings.ReplaceAll(text, hostEnvFile, s.envFile)
	return strings.ReplaceAll(text, hostLog, s.logs)
}

// checkRun checks what a nightly run of an example left on the site: the
// person paged with the environment file's routing key, and the outputs
// written, readable by the group and no one else when umask says so.
func (s *site) checkRun(t *testing.T, outputs []string, mode os.FileMode) {
	t.Helper()
	pages := s.pager.got()
	if len(pages) != 1 || pages[0].EventAction != "trigger" || pages[0].RoutingKey != "R0deploytest" {
		t.Errorf("pages %+v; want one trigger with the environment file's routing key", pages)
	}
	for _, path := range outputs {
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("the run wrote no %s: %v", path, err)
		} else if mode != 0 && fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), mode)
		}
	}
}

// The example environment file holds the secrets the examples need, in a
// form that systemd, /bin/sh and kubectl read alike.
func TestEnvironmentFileExample(t *testing.T) {
	t.Parallel()
	text := readFile(t, "deploy/reconcile.env.example")
	var keys []string
	safe := regexp.MustCompile(`^[A-Za-z0-9_./:@?=+,%#-]*$`)
	for _, kv := range envFile(t, text) {
		keys = append(keys, kv[0])
		if !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(kv[0]) || !safe.MatchString(kv[1]) {
			t.Errorf("%s=%s: want KEY=value with no quotes, spaces or characters /bin/sh reads otherwise", kv[0], kv[1])
		}
	}
	want := []string{"RECONCILE_LEDGER", "STRIPE_API_KEY", "RECONCILE_PAGER_ROUTING_KEY", "AWS_REGION"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("reconcile.env.example settings (-want +got):\n%s", diff)
	}
	// /bin/sh reads every value as written, as the crontab's `. file` does.
	dir := t.TempDir()
	path := filepath.Join(dir, "env")
	if err := os.WriteFile(path, []byte(text), 0o400); err != nil {
		t.Fatal(err)
	}
	r := shell(t, nil, "set -a && . "+path+" && set +a && env")
	for _, kv := range envFile(t, text) {
		if !strings.Contains(r.stdout, "\n"+kv[0]+"="+kv[1]+"\n") {
			t.Errorf("/bin/sh reads %s otherwise than %q: %s", kv[0], kv[1], r)
		}
	}
}

// crontabEntry is the one job of deploy/reconcile.cron, and the
// environment lines before it.
type crontabEntry struct {
	env      map[string]string
	schedule string
	user     string
	command  string
}

func readCrontab(t *testing.T) crontabEntry {
	t.Helper()
	e := crontabEntry{env: map[string]string{}}
	jobs := 0
	assign := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$`)
	for _, line := range strings.Split(readFile(t, "deploy/reconcile.cron"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := assign.FindStringSubmatch(line); m != nil && jobs == 0 {
			e.env[m[1]] = m[2]
			continue
		}
		f := strings.Fields(line)
		if len(f) < 7 {
			t.Fatalf("crontab line %q: want five schedule fields, a user and a command", line)
		}
		jobs++
		e.schedule, e.user = strings.Join(f[:5], " "), f[5]
		e.command = strings.TrimSpace(line[strings.Index(line, " "+f[5]+" ")+len(f[5])+2:])
	}
	if jobs != 1 {
		t.Fatalf("deploy/reconcile.cron has %d jobs, want 1", jobs)
	}
	return e
}

// The crontab's schedule is 04:30 UTC, its command runs the binary by its
// absolute path with the secrets from the environment file, and that exact
// command line, run by /bin/sh as cron runs it, reconciles a SQLite ledger
// against a sample report, pages, and writes a group-readable workbook.
func TestCrontabExample(t *testing.T) {
	t.Parallel()
	e := readCrontab(t)
	if e.env["CRON_TZ"] != "UTC" || e.env["SHELL"] != "/bin/sh" {
		t.Errorf("crontab environment %v; want CRON_TZ=UTC and SHELL=/bin/sh", e.env)
	}
	sched, err := cron.ParseStandard("CRON_TZ=" + e.env["CRON_TZ"] + " " + e.schedule)
	if err != nil {
		t.Fatalf("crontab schedule %q: %v", e.schedule, err)
	}
	from := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if got, want := sched.Next(from), time.Date(2026, 11, 29, 4, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("crontab schedule %q: next after %v is %v, want %v", e.schedule, from, got, want)
	}
	if e.user != "reconcile" {
		t.Errorf("crontab user %q, want reconcile", e.user)
	}
	if strings.Contains(e.command, "%") {
		t.Errorf("crontab command has a %%, which cron turns into a new line: %s", e.command)
	}
	if regexp.MustCompile(`(^|[^/])reconcile run`).MatchString(e.command) || !strings.Contains(e.command, hostBinary+" run ") {
		t.Errorf("crontab command does not run %s by its absolute path: %s", hostBinary, e.command)
	}
	if !strings.Contains(e.command, ". "+hostEnvFile) || !strings.Contains(e.command, "set -a") {
		t.Errorf("crontab command does not export the settings of %s: %s", hostEnvFile, e.command)
	}

	s := newSite(t)
	line := s.mapPaths(t, "deploy/reconcile.cron", e.command)
	// cron's own environment: its variables, the user's HOME and LOGNAME,
	// and a PATH of /usr/bin:/bin.
	r := shell(t, []string{"CRON_TZ=" + e.env["CRON_TZ"], "SHELL=" + e.env["SHELL"], "LOGNAME=reconcile", "PATH=/usr/bin:/bin"}, line)
	log, _ := os.ReadFile(filepath.Join(s.logs, "run.log"))
	if r.code != 3 || !regexp.MustCompile(`mismatched\s+1\s`).Match(log) {
		t.Fatalf("the crontab's command (%s): %s\nrun.log:\n%s\nwant exit 3 (a person paged for the mismatched charge) and the summary in run.log", line, r, log)
	}
	s.checkRun(t, []string{filepath.Join(s.state, "discrepancies.xlsx"), filepath.Join(s.state, "last.json"), filepath.Join(s.metrics, "reconcile.prom")}, 0)
	for _, f := range []string{"discrepancies.xlsx", "last.json"} {
		if fi, err := os.Stat(filepath.Join(s.state, f)); err == nil && fi.Mode().Perm() != 0o640 {
			t.Errorf("%s has mode %v, want 0640 (umask 027): readable by the group, not by others", f, fi.Mode().Perm())
		}
	}
}

// unit is a systemd unit file: section → key → values, in order.
type unit map[string]map[string][]string

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	u, section := unit{}, ""
	for i, line := range strings.Split(readFile(t, path), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s line %d %q: want Key=value in a section", path, i+1, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

func (u unit) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// The service runs the binary by its absolute path with the environment
// file, in a state directory with umask 0027 and the usual hardening, and
// every file it writes is in a path ProtectSystem=strict leaves writable.
// Its ExecStart, run with its umask and environment, reconciles a SQLite
// ledger against a sample report, pages, and writes a workbook readable by
// the group and no one else. The timer starts it at 04:30 UTC.
func TestSystemdExample(t *testing.T) {
	t.Parallel()
	svc := readUnit(t, "deploy/reconcile.service")
	for key, want := range map[string]string{"Type": "oneshot", "User": "reconcile", "Group": "reconcile", "EnvironmentFile": hostEnvFile,
		"StateDirectory": "reconcile", "StateDirectoryMode": "0750", "UMask": "0027", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
		"ProtectHome": "yes", "PrivateTmp": "yes", "PrivateDevices": "yes", "CapabilityBoundingSet": "", "SuccessExitStatus": "3"} {
		if got := svc.get("Service", key); got != want {
			t.Errorf("reconcile.service %s=%q, want %q", key, got, want)
		}
	}
	execStart := svc.get("Service", "ExecStart")
	if strings.ContainsAny(execStart, `%$"'\`) {
		t.Fatalf("ExecStart %q has a specifier, a variable or a quote: keep it a plain command line", execStart)
	}
	args := strings.Fields(execStart)
	if len(args) == 0 || args[0] != hostBinary {
		t.Fatalf("ExecStart %q does not run %s", execStart, hostBinary)
	}
	writable := append([]string{"/var/lib/" + svc.get("Service", "StateDirectory") + "/"}, svc["Service"]["ReadWritePaths"]...)
	for i, a := range args {
		if i == 0 || (args[i-1] != "--json" && args[i-1] != "--xlsx" && args[i-1] != "--metrics-file") {
			continue
		}
		ok := false
		for _, dir := range writable {
			ok = ok || strings.HasPrefix(a, strings.TrimSuffix(dir, "/")+"/")
		}
		if !ok {
			t.Errorf("ExecStart writes %s, which ProtectSystem=strict makes read-only (writable: %q)", a, writable)
		}
	}

	tmr := readUnit(t, "deploy/reconcile.timer")
	for key, want := range map[string]string{"OnCalendar": "*-*-* 04:30:00 UTC", "Persistent": "true"} {
		if got := tmr.get("Timer", key); got != want {
			t.Errorf("reconcile.timer %s=%q, want %q", key, got, want)
		}
	}
	if got := tmr.get("Install", "WantedBy"); got != "timers.target" {
		t.Errorf("reconcile.timer WantedBy=%q, want timers.target", got)
	}

	s := newSite(t)
	mapped := strings.Fields(s.mapPaths(t, "reconcile.service ExecStart", execStart))
	// systemd reads the environment file and sets the umask; sh only does
	// the same here, and then runs ExecStart's words as they are.
	r := shell(t, s.env(t), "umask "+svc.get("Service", "UMask")+" && exec "+strings.Join(mapped, " "))
	if r.code != 3 && r.code != 0 {
		t.Fatalf("ExecStart (%q): %s; want 0 or 3 (SuccessExitStatus)", mapped, r)
	}
	s.checkRun(t, []string{filepath.Join(s.state, "discrepancies.xlsx"), filepath.Join(s.state, "last.json")}, 0o640)
	s.checkRun(t, []string{filepath.Join(s.metrics, "reconcile.prom")}, 0)
}

// systemd-analyze, when installed, finds nothing wrong with the unit and
// the timer, and rates the service's exposure at most 2.0 ("OK").
func TestSystemdAnalyze(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed: the unit files are checked only by TestSystemdExample")
	}
	// verify wants the binary of ExecStart and systemd's own units: a root
	// of its own holds both.
	rootDir := t.TempDir()
	for _, d := range []string{"usr/local/bin", "etc/systemd/system", "usr/lib/systemd"} {
		if err := os.MkdirAll(filepath.Join(rootDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if r := shell(t, nil, "cp -a /usr/lib/systemd/system "+filepath.Join(rootDir, "usr/lib/systemd/")+" && cp "+reconcileBinary(t)+" "+filepath.Join(rootDir, hostBinary)+
		" && cp "+filepath.Join(root, "deploy/reconcile.service")+" "+filepath.Join(root, "deploy/reconcile.timer")+" "+filepath.Join(rootDir, "etc/systemd/system/")); r.code != 0 {
		t.Fatalf("set up a root for systemd-analyze: %s", r)
	}
	if r := execute(t, exec.Command("systemd-analyze", "verify", "--root="+rootDir, "reconcile.service", "reconcile.timer")); r.code != 0 || r.stdout+r.stderr != "" {
		t.Errorf("systemd-analyze verify: %s; want exit 0 and nothing said", r)
	}
	r := execute(t, exec.Command("systemd-analyze", "security", "--offline=true", "--threshold=20", filepath.Join(root, "deploy/reconcile.service")))
	m := regexp.MustCompile(`Overall exposure level for reconcile.service: ([0-9.]+) (\w+)`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || m[2] != "OK" {
		t.Errorf("systemd-analyze security: %s; want an exposure of at most 2.0, OK", r)
	} else {
		t.Logf("systemd-analyze security: exposure %s %s", m[1], m[2])
	}
	if r := execute(t, exec.Command("systemd-analyze", "calendar", "*-*-* 04:30:00 UTC")); r.code != 0 || !strings.Contains(r.stdout, "Normalized form: *-*-* 04:30:00 UTC") {
		t.Errorf("systemd-analyze calendar: %s", r)
	}
}

// cronJobManifest is the part of the Kubernetes objects the manifest uses,
// with the API's field names: decoding it with unknown fields refused finds
// a misspelt field.
type cronJobManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		// PersistentVolumeClaim
		AccessModes []string `json:"accessModes"`
		Resources   struct {
			Requests map[string]string `json:"requests"`
		} `json:"resources"`
		// CronJob
		Schedule                   string `json:"schedule"`
		TimeZone                   string `json:"timeZone"`
		ConcurrencyPolicy          string `json:"concurrencyPolicy"`
		StartingDeadlineSeconds    int    `json:"startingDeadlineSeconds"`
		SuccessfulJobsHistoryLimit int    `json:"successfulJobsHistoryLimit"`
		FailedJobsHistoryLimit     int    `json:"failedJobsHistoryLimit"`
		JobTemplate                struct {
			Spec struct {
				BackoffLimit          *int `json:"backoffLimit"`
				ActiveDeadlineSeconds int  `json:"activeDeadlineSeconds"`
				Template              struct {
					Metadata struct {
						Labels map[string]string `json:"labels"`
					} `json:"metadata"`
					Spec podSpec `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

type podSpec struct {
	RestartPolicy   string `json:"restartPolicy"`
	SecurityContext struct {
		RunAsNonRoot   bool `json:"runAsNonRoot"`
		RunAsUser      int  `json:"runAsUser"`
		RunAsGroup     int  `json:"runAsGroup"`
		FSGroup        int  `json:"fsGroup"`
		SeccompProfile struct {
			Type string `json:"type"`
		} `json:"seccompProfile"`
	} `json:"securityContext"`
	Containers []struct {
		Name    string   `json:"name"`
		Image   string   `json:"image"`
		Command []string `json:"command"`
		Args    []string `json:"args"`
		EnvFrom []struct {
			SecretRef struct {
				Name string `json:"name"`
			} `json:"secretRef"`
		} `json:"envFrom"`
		Resources struct {
			Requests map[string]string `json:"requests"`
			Limits   map[string]string `json:"limits"`
		} `json:"resources"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool  `json:"readOnlyRootFilesystem"`
			Capabilities             struct {
				Drop []string `json:"drop"`
			} `json:"capabilities"`
		} `json:"securityContext"`
		VolumeMounts []struct {
			Name      string `json:"name"`
			MountPath string `json:"mountPath"`
		} `json:"volumeMounts"`
	} `json:"containers"`
	Volumes []struct {
		Name                  string `json:"name"`
		PersistentVolumeClaim *struct {
			ClaimName string `json:"claimName"`
		} `json:"persistentVolumeClaim"`
		EmptyDir *struct {
			SizeLimit string `json:"sizeLimit"`
		} `json:"emptyDir"`
	} `json:"volumes"`
}

// pushgateway is a Prometheus Pushgateway on loopback that records the
// paths pushed to.
func pushgateway(t *testing.T) (string, func() []string) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), paths...) }
}
