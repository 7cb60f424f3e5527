package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"runtime"
)

// WriteJSON writes res as JSON, indented when indent is set, a few
// blocks of discrepancies at a time: encoding a run of millions of
// findings whole would hold its text twice over (hundreds of megabytes at
// ten million effects). HTML characters are written as they are.
func WriteJSON(w io.Writer, res *Result, indent bool) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := writeResult(bw, res, indent); err != nil {
		return err
	}
	if indent {
		bw.WriteByte('\n') // as json.Encoder ends what it indents
	}
	return bw.Flush()
}

func writeResult(bw *bufio.Writer, res *Result, indent bool) error {
	ds := res.Discrepancies
	if ds == nil { // null: nothing to write one at a time
		b, err := encodeJSON(res, indent)
		bw.Write(b)
		return err
	}
	res.Discrepancies = []Discrepancy{}
	head, err := encodeJSON(res, indent)
	res.Discrepancies = ds
	if err != nil {
		return err
	}
	// Text in the result is quoted, so only the member itself reads so.
	marker := []byte(`"discrepancies":[]`)
	if indent {
		marker = []byte(`"discrepancies": []`)
	}
	at := bytes.Index(head, marker) + len(marker) - 1
	tail := bytes.Clone(head[at:])
	bw.Write(head[:at])
	// The discrepancies are encoded a block at a time, as many blocks at
	// once as there are processors, and written in order: a result is
	// written at the run's end, when the database has little left to do
	// (a first night of 1M: 0.4 s of a processor to write its 35k
	// findings indented, one at a time).
	blocks := make(chan chan encoded, runtime.GOMAXPROCS(0))
	go func() {
		defer close(blocks)
		for start := 0; start < len(ds); start += jsonBlock {
			c := make(chan encoded, 1)
			blocks <- c
			go func() { c <- encodeBlock(ds[start:min(start+jsonBlock, len(ds))], start == 0, indent) }()
		}
	}()
	for c := range blocks { // every block, even after an error, so that none is left waiting
		if b := <-c; err == nil {
			err = b.err
			bw.Write(b.text)
		}
	}
	if err != nil {
		return err
	}
	if indent && len(ds) > 0 {
		bw.WriteString("\n  ")
	}
	bw.Write(tail)
	return nil
}

// jsonBlock is how many discrepancies are encoded together.
const jsonBlock = 512

// encoded is a block of discrepancies as JSON, or why it could not be.
type encoded struct {
	text []byte
	err  error
}

// encodeBlock encodes ds as members of the result's list of
// discrepancies, each after a comma but the list's first.
func encodeBlock(ds []Discrepancy, first, indent bool) encoded {
	var out, buf bytes.Buffer
	enc := newEncoder(&buf, "    ", indent)
	for i := range ds {
		if i > 0 || !first {
			out.WriteByte(',')
		}
		if indent {
			out.WriteString("\n    ")
		}
		buf.Reset()
		if err := enc.Encode(&ds[i]); err != nil {
			return encoded{err: err}
		}
		out.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	return encoded{text: out.Bytes()}
}

// encodeJSON encodes v as encoding/json does, HTML characters as they are,
// indented when indent is set, without the encoder's newline.
func encodeJSON(v any, indent bool) ([]byte, error) {
	var buf bytes.Buffer
	err := newEncoder(&buf, "", indent).Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// newEncoder is an encoder into buf that leaves HTML characters as they
// are and, when indent is set, indents after prefix.
func newEncoder(buf *bytes.Buffer, prefix string, indent bool) *json.Encoder {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent(prefix, "  ")
	}
	return enc
}
