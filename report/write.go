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
	if ds == nil {
		b, err := encode(res, "")
		if err == nil {
			bw.Write(b)
		}
		if indent {
			bw.WriteByte('\n')
		}
		if err != nil {
			return err
		}
		return bw.Flush()
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
	if indent {
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
