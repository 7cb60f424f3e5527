package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Cluster is a PostgreSQL server of a test's own, started from the
// server binaries under /usr/lib/postgresql, for what a shared server
// must not go through: a crash.
type Cluster struct {
	URL  string // its postgres database
	t    testing.TB
	bin  string
	dir  string
	user *syscall.Credential // the postgres user's, when the test runs as root
}

// NewCluster starts a cluster for t and stops it when t ends. The test
// command installs the binaries where they are missing; without them t
// fails.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Fatal("this test starts a PostgreSQL cluster of its own and no server binaries are under /usr/lib/postgresql/*/bin: apt-get install postgresql")
	}
	c := &Cluster{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "reconcile-crash-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c.dir = dir
	if os.Getuid() == 0 { // the server refuses to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the cluster needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.user = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c.run("initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
	// initdb made the file, as the cluster's user, who keeps it.
	if err := os.WriteFile(filepath.Join(c.data(), "postgresql.auto.conf"), fmt.Appendf(nil,
		"port = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n", port, dir), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(func() { c.command("pg_ctl", "-D", c.data(), "-m", "immediate", "stop").Run() })
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// command is a server binary's command, run as the cluster's user.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	if c.user != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.user}
	}
	return cmd
}

// run runs a server binary and fails the test when it fails.
func (c *Cluster) run(name string, args ...string) {
	c.t.Helper()
	if out, err := c.command(name, args...).CombinedOutput(); err != nil {
		c.t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

// Start starts the server and waits until it accepts connections; after
// Crash, it first recovers.
func (c *Cluster) Start() {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "start")
}

// Crash stops the server as a power cut would: no checkpoint, no
// shutdown; the next Start recovers from the write-ahead log.
func (c *Cluster) Crash() {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "stop")
}
