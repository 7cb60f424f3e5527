package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// WriteJSON writes res as JSON, indented when indent is set, one
// discrepancy at a time: encoding a run of millions of findings whole
// would hold its text twice over (hundreds of megabytes at ten million
// effects). HTML characters are written as they are.
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
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	encode := func(v any, prefix string) ([]byte, error) {
		buf.Reset()
		if indent {
			enc.SetIndent(prefix, "  ")
		}
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	ds := res.Discrepancies
	if ds == nil { // null: nothing to write one at a time
		b, err := encode(res, "")
		bw.Write(b)
		return err
	}
	res.Discrepancies = []Discrepancy{}
	head, err := encode(res, "")
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
	for i := range ds {
		if i > 0 {
			bw.WriteByte(',')
		}
		if indent {
			bw.WriteString("\n    ")
		}
		b, err := encode(&ds[i], "    ")
		if err != nil {
			return err
		}
		bw.Write(b)
	}
	if indent && len(ds) > 0 {
		bw.WriteString("\n  ")
	}
	bw.Write(tail)
	return nil
}
