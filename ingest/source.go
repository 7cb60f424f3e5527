// Package ingest turns inputs (files, directories, globs, standard input,
// gzip, S3 prefixes) into normalized evidence: it finds the inputs, detects
// each one's format, runs the format's parser, and accounts for every row as
// evidence, a rejection or an ignored row with its reason.
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Source is one input to read: a local file, standard input, or an S3 object.
type Source struct {
	URI  string // a path, "-", or s3://bucket/key
	Size int64  // -1 when unknown
	ETag string // the S3 object's ETag; empty elsewhere
	open func(ctx context.Context) (io.ReadCloser, error)
}

// Open opens the source for reading.
func (s Source) Open(ctx context.Context) (io.ReadCloser, error) { return s.open(ctx) }

// Local reports whether the source is a file on disk, which can be read twice.
func (s Source) Local() bool { return s.URI != "-" && !strings.HasPrefix(s.URI, "s3://") }

// InputError is an input that cannot be read at all: missing, of no known
// format, truncated, unreadable. Nothing from it is written.
type InputError struct {
	URI string
	Err error
}

func (e *InputError) Error() string { return e.URI + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(uri string, format string, args ...any) error {
	return &InputError{URI: uri, Err: fmt.Errorf(format, args...)}
}

// Skipped is an entry of an input directory that is not read, and why: a
// symlink to a directory (not followed, so that no walk can loop), a
// dangling symlink, or a named pipe, socket or device.
type Skipped struct {
	Path   string
	Reason string
}

// Expand resolves command-line inputs into sources, each list in a stable
// order: a file; a directory, walked recursively (dot files skipped); a
// glob; "-" for stdin; s3://bucket/prefix for every object under it. s3 is
// used only when an input names S3; it may be nil otherwise. A directory's
// entries that are not read are dropped; ExpandWithSkipped names them.
func Expand(ctx context.Context, inputs []string, stdin io.Reader, s3 *S3) ([]Source, error) {
	srcs, _, err := ExpandWithSkipped(ctx, inputs, stdin, s3)
	return srcs, err
}

// ExpandWithSkipped is Expand that also returns the entries of input
// directories it does not read, for the caller to tell the user. In a
// directory, a symlink to a regular file is read and a symlink to a
// directory is not followed. A named pipe, socket or device named on the
// command line or matched by a glob is an *InputError: it is not opened,
// as opening a named pipe waits for a writer.
func ExpandWithSkipped(ctx context.Context, inputs []string, stdin io.Reader, s3 *S3) ([]Source, []Skipped, error) {
	var out []Source
	var skipped []Skipped
	seen := map[string]bool{}
	add := func(s Source) {
		if !seen[s.URI] {
			seen[s.URI] = true
			out = append(out, s)
		}
	}
	for _, in := range inputs {
		switch {
		case in == "-":
			add(Source{URI: "-", Size: -1, open: func(ctx context.Context) (io.ReadCloser, error) { return openStdin(ctx, stdin), nil }})
		case strings.HasPrefix(in, "s3://"):
			if s3 == nil {
				return nil, skipped, inputErr(in, "S3 is not configured")
			}
			objs, err := s3.List(ctx, in)
			if err != nil {
				return nil, skipped, err
			}
			for _, o := range objs {
				add(o)
			}
		default:
			paths, err := localPaths(in, &skipped)
			if err != nil {
				return nil, skipped, err
			}
			for _, p := range paths {
				add(fileSource(p))
			}
		}
	}
	return out, skipped, nil
}

// localPaths expands one local input into the regular files to read,
// adding to skipped the entries of its directories that are not read.
func localPaths(in string, skipped *[]Skipped) ([]string, error) {
	info, err := os.Stat(in)
	if errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(in, "*?[") {
		matches, gerr := filepath.Glob(in)
		if gerr != nil {
			return nil, inputErr(in, "bad glob: %v", gerr)
		}
		if len(matches) == 0 {
			return nil, inputErr(in, "no file matches this pattern")
		}
		var all []string
		for _, m := range matches {
			if hiddenBelow(in, m) {
				continue
			}
			ps, err := localPaths(m, skipped)
			if err != nil {
				return nil, err
			}
			all = append(all, ps...)
		}
		return all, nil
	}
	if err != nil {
		return nil, inputErr(in, "%v", errors.Unwrap(err))
	}
	if !info.IsDir() {
		if !info.Mode().IsRegular() {
			return nil, notRegular(in, info.Mode())
		}
		return []string{in}, nil
	}
	// A symlink given is followed to its directory: WalkDir does not
	// follow a root that is a symlink, but does follow one ending in "/".
	root := in
	if l, err := os.Lstat(in); err == nil && l.Mode()&fs.ModeSymlink != 0 {
		root = in + string(filepath.Separator)
	}
	var paths []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.Type().IsRegular():
			paths = append(paths, p)
		case d.IsDir():
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Stat(p)
			switch {
			case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP):
				dest, _ := os.Readlink(p)
				*skipped = append(*skipped, Skipped{p, fmt.Sprintf("dangling symlink to %s: %v", dest, errors.Unwrap(err))})
			case err != nil:
				return err
			case target.Mode().IsRegular():
				paths = append(paths, p)
			case target.IsDir():
				*skipped = append(*skipped, Skipped{p, "symlink to a directory, not followed"})
			default:
				*skipped = append(*skipped, Skipped{p, "symlink to " + fileKind(target.Mode()) + ", not a regular file"})
			}
		default:
			*skipped = append(*skipped, Skipped{p, fileKind(d.Type()) + ", not a regular file"})
		}
		return nil
	})
	if err != nil {
		return nil, inputErr(in, "%v", err)
	}
	sort.Strings(paths)
	return paths, nil
}

// fileKind names what a file that is not regular is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

func notRegular(path string, m fs.FileMode) error {
	return inputErr(path, "%s, not a regular file: not read (to read a stream, give - and redirect it to standard input)", fileKind(m))
}

// hiddenBelow reports whether match, a match of the glob pattern, goes
// through a dot file or folder where the pattern has a wildcard: like a
// shell, a * does not match .hidden.
func hiddenBelow(pattern, match string) bool {
	pe := strings.Split(filepath.ToSlash(pattern), "/")
	me := strings.Split(filepath.ToSlash(match), "/")
	for i := range me {
		if i < len(pe) && strings.ContainsAny(pe[i], "*?[") && strings.HasPrefix(me[i], ".") && !strings.HasPrefix(pe[i], ".") {
			return true
		}
	}
	return false
}

func fileSource(path string) Source {
	size := int64(-1)
	if info, err := os.Stat(path); err == nil {
		size = info.Size()
	}
	return Source{URI: path, Size: size, open: func(ctx context.Context) (io.ReadCloser, error) {
		f, err := openRegular(path)
		if err != nil {
			return nil, err
		}
		return &ctxReader{ctx: ctx, r: f, c: f}, nil
	}}
}

// openRegular opens a regular file for reading. It opens without waiting
// (O_NONBLOCK), so that a file replaced by a named pipe since Expand is
// refused rather than waited on, and then reads in blocking mode.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, inputErr(path, "%v", errors.Unwrap(err))
	}
	info, err := f.Stat()
	switch {
	case err != nil:
		err = inputErr(path, "%v", errors.Unwrap(err))
	case !info.Mode().IsRegular():
		err = notRegular(path, info.Mode())
	default:
		if err = setBlocking(f); err != nil {
			err = inputErr(path, "%v", err)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// setBlocking clears the O_NONBLOCK that openRegular opened f with.
func setBlocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}

// ctxReader stops with the context's error once the context is done. It
// checks before each read, so a read that blocks in the kernel (a file on
// a stuck network mount) still runs to its end.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	c   io.Closer
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

func (r *ctxReader) Close() error { return r.c.Close() }

// openStdin returns a reader of stdin that stops with the context's error
// once the context is done, even in the middle of a read that would block
// for ever: a pipe whose writer neither writes nor closes. Closing it does
// not close stdin.
func openStdin(ctx context.Context, stdin io.Reader) io.ReadCloser {
	if d, ok := stdin.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Time{}) == nil {
		stop := context.AfterFunc(ctx, func() { d.SetReadDeadline(time.Now()) })
		return &deadlineReader{ctx: ctx, r: stdin, stop: stop}
	}
	return &asyncReader{ctx: ctx, r: stdin, res: make(chan readResult, 1)}
}

// deadlineReader reads a file or connection that supports deadlines (on
// Linux, an *os.File that is a pipe opened by this process, or made
// non-blocking); cancelling the context sets a deadline in the past, which
// ends the read in progress.
type deadlineReader struct {
	ctx  context.Context
	r    io.Reader
	stop func() bool
}

func (r *deadlineReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.r.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && r.ctx.Err() != nil {
		err = r.ctx.Err()
	}
	return n, err
}

func (r *deadlineReader) Close() error {
	r.stop()
	return nil
}

// asyncReader reads any other reader (standard input inherited from the
// shell is blocking, and takes no deadline) in a goroutine and stops
// waiting for it once the context is done. The read it abandons then
// blocks until stdin ends or the process exits; its bytes are never used.
type asyncReader struct {
	ctx context.Context
	r   io.Reader
	buf []byte // what the read in flight reads into
	res chan readResult
}

type readResult struct {
	n   int
	err error
}

func (r *asyncReader) Read(p []byte) (int, error) {
	// Once the context is done, a read abandoned may still be in flight
	// into buf: no read starts again.
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if cap(r.buf) < len(p) {
		r.buf = make([]byte, len(p))
	}
	buf := r.buf[:len(p)]
	go func() {
		n, err := r.r.Read(buf)
		r.res <- readResult{n, err}
	}()
	select {
	case <-r.ctx.Done():
		return 0, r.ctx.Err()
	case res := <-r.res:
		return copy(p, buf[:res.n]), res.err
	}
}

func (r *asyncReader) Close() error { return nil }

// Hash returns the hex SHA-256 of a local source's content, so that content
// already ingested can be skipped without parsing it. It is the hash Read
// reports for the same content.
func (s Source) Hash(ctx context.Context) (string, error) {
	rc, err := s.Open(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", inputErr(s.URI, "%v", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
