package ingest_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile/ingest"
)

// hangLimit is how long an expansion, open or cancelled read may take
// before a test calls it hung.
const hangLimit = 5 * time.Second

// within runs f and fails the test if it does not return within hangLimit.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatalf("%s still blocked after %v", what, hangLimit)
	}
}

func mkfifo(t *testing.T, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return path
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// A directory's symlinks to regular files are read; symlinks to
// directories (so no loop can form), dangling symlinks, sockets and named
// pipes are left out, each named with its reason; dot files are left out
// without a word, as before.
func TestExpandFollowsFileSymlinksAndNamesWhatItSkips(t *testing.T) {
	root := t.TempDir()
	other := filepath.Join(root, "archive")
	in := filepath.Join(root, "in")
	target := write(t, other, "2026-11.itemized.csv", []byte(itemized))
	a := write(t, in, "a.csv", []byte(itemized))
	link := symlink(t, target, filepath.Join(in, "b.csv"))
	if err := os.Mkdir(filepath.Join(in, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	relLink := symlink(t, "../a.csv", filepath.Join(in, "sub", "c.csv"))
	dirLink := symlink(t, other, filepath.Join(in, "archive"))
	loop := symlink(t, in, filepath.Join(in, "loop"))
	dangling := symlink(t, filepath.Join(root, "gone.csv"), filepath.Join(in, "gone.csv"))
	fifo := mkfifo(t, filepath.Join(in, "pipe.csv"))
	sock := filepath.Join(in, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer l.Close()
	symlink(t, target, filepath.Join(in, ".hidden.csv"))
	symlink(t, "nowhere", filepath.Join(in, ".dangling"))

	var srcs []ingest.Source
	var skipped []ingest.Skipped
	within(t, "Expand", func() { srcs, skipped, err = ingest.ExpandWithSkipped(context.Background(), []string{in}, nil, nil) })
	if err != nil {
		t.Fatalf("ExpandWithSkipped(%s): %v", in, err)
	}
	var uris []string
	for _, s := range srcs {
		uris = append(uris, s.URI)
	}
	if diff := cmp.Diff([]string{a, link, relLink}, uris); diff != "" {
		t.Errorf("ExpandWithSkipped(%s) sources (-want +got):\n%s", in, diff)
	}
	want := []ingest.Skipped{
		{Path: dirLink, Reason: "symlink to a directory"},
		{Path: dangling, Reason: "dangling symlink"},
		{Path: loop, Reason: "symlink to a directory"},
		{Path: fifo, Reason: "named pipe"},
		{Path: sock, Reason: "socket"},
	}
	reasonHas := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Reason" },
		cmp.Comparer(func(x, y string) bool { return strings.Contains(x, y) || strings.Contains(y, x) }))
	if diff := cmp.Diff(want, skipped, reasonHas); diff != "" {
		t.Errorf("ExpandWithSkipped(%s) skipped (-want +got):\n%s", in, diff)
	}
	// Expand reads the same sources.
	plain, err := ingest.Expand(context.Background(), []string{in}, nil, nil)
	if err != nil || len(plain) != len(srcs) {
		t.Errorf("Expand(%s) = %d sources, %v; want %d", in, len(plain), err, len(srcs))
	}
}

// A symlink named on the command line is read: to a file as that file, to
// a directory as that directory.
func TestExpandReadsSymlinksItIsGiven(t *testing.T) {
	root := t.TempDir()
	target := write(t, root, "data/nov.csv", []byte(itemized))
	fileLink := symlink(t, target, filepath.Join(root, "latest.csv"))
	dirLink := symlink(t, filepath.Join(root, "data"), filepath.Join(root, "current"))
	for _, tc := range []struct {
		arg  string
		want []string
	}{
		{fileLink, []string{fileLink}},
		{dirLink, []string{filepath.Join(dirLink, "nov.csv")}},
		{filepath.Join(root, "lat*.csv"), []string{fileLink}},
	} {
		srcs, skipped, err := ingest.ExpandWithSkipped(context.Background(), []string{tc.arg}, nil, nil)
		var uris []string
		for _, s := range srcs {
			uris = append(uris, s.URI)
		}
		if err != nil || len(skipped) != 0 || !cmp.Equal(uris, tc.want) {
			t.Errorf("ExpandWithSkipped(%s) = %q, skipped %v, %v; want %q", tc.arg, uris, skipped, err, tc.want)
		}
	}
}

// A named pipe, socket or other file that is not a regular file, named on
// the command line, matched by a glob or reached through a symlink given,
// is refused by name before anything opens it: opening a named pipe
// blocks until a writer comes.
func TestExpandRefusesNonRegularFilesItIsGiven(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.csv", []byte(itemized))
	fifo := mkfifo(t, filepath.Join(dir, "b.csv"))
	link := symlink(t, fifo, filepath.Join(dir, "link"))
	for _, tc := range []struct{ arg, uri string }{
		{fifo, fifo},
		{filepath.Join(dir, "*.csv"), fifo},
		{link, link},
	} {
		var srcs []ingest.Source
		var err error
		within(t, "Expand("+tc.arg+")", func() { srcs, err = ingest.Expand(context.Background(), []string{tc.arg}, nil, nil) })
		var ie *ingest.InputError
		if !errors.As(err, &ie) || ie.URI != tc.uri || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("Expand(%s) = %d sources, error %v; want an InputError naming %s as a named pipe", tc.arg, len(srcs), err, tc.uri)
		}
	}
}

// A file that turns into a named pipe between Expand and Open is refused
// by Open, which does not wait for a writer.
func TestOpenRefusesAFileThatBecameANamedPipe(t *testing.T) {
	path := write(t, t.TempDir(), "a.csv", []byte(itemized))
	srcs, err := ingest.Expand(context.Background(), []string{path}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, path)
	var rc io.ReadCloser
	within(t, "Open", func() { rc, err = srcs[0].Open(context.Background()) })
	var ie *ingest.InputError
	if !errors.As(err, &ie) || ie.URI != path || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("Open(%s) error = %v; want an InputError naming it as a named pipe", path, err)
	}
	if rc != nil {
		rc.Close()
	}
}

// Once the context is cancelled, a local file's reader stops with the
// context's error.
func TestCancelStopsReadingAFile(t *testing.T) {
	path := write(t, t.TempDir(), "a.csv", []byte(itemized))
	srcs, err := ingest.Expand(context.Background(), []string{path}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := srcs[0].Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 8)
	if n, err := rc.Read(buf); n != 8 || err != nil {
		t.Fatalf("Read before cancel = %d, %v; want 8, nil", n, err)
	}
	cancel()
	if n, err := rc.Read(buf); n != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("Read after cancel = %d, %v; want 0, %v", n, err, context.Canceled)
	}
}

// Cancelling the context stops a read of standard input that would never
// end (a writer that neither writes nor closes), whether standard input is
// a pipe (an *os.File) or any other reader.
func TestCancelStopsReadingStdin(t *testing.T) {
	osPipe := func(t *testing.T) (io.Reader, io.Writer) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close(); r.Close() })
		return r, w
	}
	ioPipe := func(t *testing.T) (io.Reader, io.Writer) {
		r, w := io.Pipe()
		t.Cleanup(func() { w.Close() })
		return r, w
	}
	for _, tc := range []struct {
		name string
		pipe func(t *testing.T) (io.Reader, io.Writer)
	}{{"os.Pipe", osPipe}, {"io.Pipe", ioPipe}} {
		t.Run(tc.name, func(t *testing.T) {
			stdin, w := tc.pipe(t)
			srcs, err := ingest.Expand(context.Background(), []string{"-"}, stdin, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rc, err := srcs[0].Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			go io.WriteString(w, "balance_transaction_id,") // the start of a report, then nothing
			buf := make([]byte, 64)
			n, err := io.ReadAtLeast(rc, buf, len("balance_transaction_id,"))
			if err != nil {
				t.Fatalf("Read = %d, %v; want what was written", n, err)
			}
			time.AfterFunc(50*time.Millisecond, cancel)
			within(t, "Read of stdin after cancel", func() { n, err = rc.Read(buf) })
			if n != 0 || !errors.Is(err, context.Canceled) {
				t.Errorf("Read after cancel = %d, %v; want 0, %v", n, err, context.Canceled)
			}
		})
	}
}

// ingest.Read of standard input that never ends returns once the context
// is cancelled.
func TestCancelStopsIngestReadOfStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := io.WriteString(w, itemized[:200]); err != nil {
		t.Fatal(err)
	}
	srcs, err := ingest.Expand(context.Background(), []string{"-"}, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	within(t, "ingest.Read of stdin after cancel", func() {
		_, err = ingest.Read(ctx, srcs[0], &ingest.Options{}, &collect{})
	})
	if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Errorf("Read(stdin) error = %v; want one saying %v", err, context.Canceled)
	}
}
