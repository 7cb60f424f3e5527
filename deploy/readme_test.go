package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection is the text of README.md's section titled title, up to the
// next section of the same level.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	readme := readFile(t, "README.md")
	start := strings.Index(readme, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("README.md has no section %q", title)
	}
	rest := readme[start+len(title)+5:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// README.md starts with the two commands a new user needs: the demo and
// the tests.
func TestReadmeStartsWithTheDemoAndTheTests(t *testing.T) {
	t.Parallel()
	readme := readFile(t, "README.md")
	m := regexp.MustCompile("(?s)^# reconcile\n\n```sh\n(.*?)```\n").FindStringSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md does not start with its title and a sh block:\n%.300s", readme)
	}
	lines := strings.Split(strings.TrimSpace(m[1]), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "go run ./cmd/reconcile demo ") || !strings.HasPrefix(lines[1], "scripts/test ") {
		t.Errorf("README.md's first block %q: want `go run ./cmd/reconcile demo` and `scripts/test`, each with its comment", lines)
	}
	if fi, err := os.Stat(filepath.Join(root, "scripts/test")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("scripts/test is not an executable file: %v", err)
	}
}

// The getting-started commands are those of the Makefile and the go tool:
// make build leaves ./reconcile, go install installs a binary named
// reconcile.
func TestReadmeGettingStarted(t *testing.T) {
	t.Parallel()
	block := docBlock(t, "README.md", "getting-started")
	for _, want := range []string{"go run ./cmd/reconcile demo ", "go install ./cmd/reconcile ", "make build "} {
		if !strings.Contains(block, "\n"+want) && !strings.HasPrefix(block, want) {
			t.Errorf("README.md getting-started lacks %q:\n%s", want, block)
		}
	}
	if !regexp.MustCompile(`(?m)^build:\n\tgo build -o reconcile \./cmd/reconcile$`).MatchString(readFile(t, "Makefile")) {
		t.Errorf("the Makefile's build target no longer makes ./reconcile, as README.md says")
	}
	cmd := exec.Command(goCommand(), "list", "-f", "{{.Target}}", "./cmd/reconcile")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil || filepath.Base(strings.TrimSpace(string(out))) != "reconcile" {
		t.Errorf("go list -f {{.Target}} ./cmd/reconcile = %q, %v; want a binary named reconcile", out, err)
	}
}

// readmeNamesFiles checks that README.md's Getting started names every
// file the demo left in dir.
func readmeNamesFiles(t *testing.T, dir string) {
	t.Helper()
	section := readmeSection(t, "Getting started")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); !strings.HasSuffix(name, "-wal") && !strings.HasSuffix(name, "-shm") && !strings.Contains(section, "`"+name+"`") {
			t.Errorf("the demo writes %s, which README.md's Getting started does not name", name)
		}
	}
}

// The crontab line README.md shows is the one in deploy/reconcile.cron.
func TestReadmeCrontabIsTheExample(t *testing.T) {
	t.Parallel()
	e := readCrontab(t)
	want := e.schedule + " " + e.user + " " + e.command
	if got := strings.TrimSpace(docBlock(t, "README.md", "crontab")); got != want {
		t.Errorf("README.md's crontab line is not deploy/reconcile.cron's:\n got %s\nwant %s", got, want)
	}
}

// Every file README.md and docs/LEDGER.md link to in the repository is
// there.
func TestReadmeLinksResolve(t *testing.T) {
	t.Parallel()
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, doc := range []string{"README.md", "docs/LEDGER.md"} {
		for _, m := range link.FindAllStringSubmatch(readFile(t, doc), -1) {
			path := filepath.Join(root, filepath.Dir(doc), m[1])
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s: %v", doc, m[1], err)
			}
		}
	}
}
