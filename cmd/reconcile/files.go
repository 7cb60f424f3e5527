package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"reconcile/ingest"
)

// writeWith writes a file whole or not at all: into a temporary file in
// the same directory, synced, then renamed over path, so that a reader (or
// a full disk) never leaves half a result that looks complete.
func writeWith(path string, write func(io.Writer) error) error {
	w, err := writeBeside(path, write)
	if err != nil {
		return err
	}
	return w.keep()
}

// written is a file written beside its path, not yet in its place.
type written struct{ temp, path string }

// writeBeside writes a new file beside path, synced, for keep to put in
// its place or discard to remove.
func writeBeside(path string, write func(io.Writer) error) (*written, error) {
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return &written{temp: f.Name(), path: path}, nil
}

func (w *written) keep() error {
	if err := os.Rename(w.temp, w.path); err != nil {
		w.discard()
		return err
	}
	return nil
}

func (w *written) discard() { os.Remove(w.temp) }

// createTemp creates a new file beside path with mode 0666 less the umask,
// as os.Create would make path itself (os.CreateTemp makes 0600: a
// workbook the finance group could not read).
func createTemp(path string) (*os.File, error) {
	for {
		name := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}

// checkOverwrite refuses an output path that would destroy something: an
// input of the command (`--json *.csv` takes the first file as the
// destination), or an existing file that is not an earlier output of the
// same kind (isOutput says which are). "-" and a path that does not exist
// yet are fine.
func checkOverwrite(flag, path string, inputs []ingest.Source, isOutput func(head []byte) bool) error {
	if path == "" || path == "-" {
		return nil
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return usageError("%s %s: %v", flag, path, err)
	}
	for _, src := range inputs {
		if in, err := os.Stat(src.URI); src.Local() && err == nil && os.SameFile(fi, in) {
			return usageError("%s %s: refusing to overwrite an input of this command (a shell glob after %s?)", flag, path, flag)
		}
	}
	head := make([]byte, 64<<10)
	f, err := os.Open(path)
	if err != nil {
		return usageError("%s %s: %v", flag, path, err)
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	if !fi.Mode().IsRegular() || !isOutput(head[:n]) {
		return usageError("%s %s: refusing to overwrite a file that is not an earlier %s output; remove it or choose another name", flag, path, flag)
	}
	return nil
}

// isWorkbook says whether a file begins as an xlsx workbook (a zip) does.
func isWorkbook(head []byte) bool {
	return len(head) == 0 || bytes.HasPrefix(head, []byte("PK\x03\x04"))
}

// jsonOutput says whether a file begins as a JSON object whose first member
// is one of keys, as an earlier output of a command does (or is empty):
// what that command's --json may replace.
func jsonOutput(keys ...string) func(head []byte) bool {
	return func(head []byte) bool {
		head = bytes.TrimLeft(head, " \t\r\n")
		if len(head) == 0 {
			return true // an empty file holds nothing to lose
		}
		rest := bytes.TrimLeft(head[1:], " \t\r\n")
		return head[0] == '{' && slices.ContainsFunc(keys, func(k string) bool { return bytes.HasPrefix(rest, []byte(`"`+k+`"`)) })
	}
}

// The outputs --json may replace: a run's result or an ingest check, a
// list of runs, what show and escalations write.
var (
	isJSONResult = jsonOutput("run_id", "inputs")
	isRunsList   = jsonOutput("runs")
	isOnCallJSON = jsonOutput("effect", "escalations")
)
