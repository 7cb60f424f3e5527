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

// Expand resolves command-line inputs into sources, each list in a stable
// order: a file; a directory, walked recursively (dot files skipped); a
// glob; "-" for stdin; s3://bucket/prefix for every object under it. s3 is
// used only when an input names S3; it may be nil otherwise.
func Expand(ctx context.Context, inputs []string, stdin io.Reader, s3 *S3) ([]Source, error) {
	var out []Source
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
			add(Source{URI: "-", Size: -1, open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(stdin), nil }})
		case strings.HasPrefix(in, "s3://"):
			if s3 == nil {
				return nil, inputErr(in, "S3 is not configured")
			}
			objs, err := s3.List(ctx, in)
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				add(o)
			}
		default:
			paths, err := localPaths(in)
			if err != nil {
				return nil, err
			}
			for _, p := range paths {
				add(fileSource(p))
			}
		}
	}
	return out, nil
}

func localPaths(in string) ([]string, error) {
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
			ps, err := localPaths(m)
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
		return []string{in}, nil
	}
	var paths []string
	err = filepath.WalkDir(in, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != in {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, inputErr(in, "%v", err)
	}
	sort.Strings(paths)
	return paths, nil
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
	return Source{URI: path, Size: size, open: func(context.Context) (io.ReadCloser, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, inputErr(path, "%v", errors.Unwrap(err))
		}
		return f, nil
	}}
}

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
