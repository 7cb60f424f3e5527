// Package camt reads ISO 20022 camt.053 bank-to-customer statements
// (camt.053.001.02, .04, .08 and the versions between) into evidence for the
// provider "bank".
//
// The document is streamed: the decoder walks the statement and decodes one
// element at a time, so memory stays bounded by the largest single element
// whatever the size of the file.
//
// A row is an entry (Ntry), or each transaction (TxDtls) of a batch entry, one
// that itemises two or more transactions. An entry with a single TxDtls is
// one row, enriched with that TxDtls's references. A Btch block alone does not
// make rows: when a bank books a batch as one lump sum and reports at most one
// TxDtls, the lump sum is the only amount the statement vouches for. Balances
// (Bal) are rows too, and are ignored with their type and amount as the
// reason. Statement headers, transaction summaries and interest terms are not
// rows.
package camt

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"golang.org/x/text/encoding/charmap"

	"reconcile"
	"reconcile/ingest/tabular"
)

// Provider is the provider name on every record this package produces.
const Provider = "bank"

// Options tunes Parse. The zero value is ready to use; there is nothing to
// tune yet.
type Options struct{}

// Detect reports whether head, the first bytes of a file, look like a camt.053
// statement.
func Detect(name string, head []byte) bool {
	h := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\ufeff")), " \t\r\n")
	if !bytes.HasPrefix(h, []byte("<")) {
		return false
	}
	return bytes.Contains(h, []byte("camt.053")) || bytes.Contains(h, []byte("BkToCstmrStmt"))
}

// namespacePrefix starts the namespace of every camt.053 version.
const namespacePrefix = "urn:iso:std:iso:20022:tech:xsd:camt.053."

// Parse reads a camt.053 document from r and gives every entry, batch
// transaction and balance its outcome through sink. It returns an error, and
// nothing else, when the input is not XML, not a camt.053 statement, holds no
// statement (Stmt), or is truncated.
func Parse(ctx context.Context, r io.Reader, opt Options, sink reconcile.RowSink) error {
	src, err := utf8Source(r)
	if err != nil {
		return err
	}
	t := newTape(src)
	d := xml.NewDecoder(t)
	// utf8Source has already converted any single-byte charset to UTF-8.
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	p := &parser{ctx: ctx, dec: d, tape: t, sink: sink}
	return p.document()
}

// encodingDecl finds the encoding in an XML declaration.
var encodingDecl = regexp.MustCompile(`^(?:\x{FEFF})?\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']`)

// utf8Source returns r as UTF-8. Some banks still write ISO-8859-1 or
// Windows-1252; the conversion happens before the decoder sees the bytes so
// that offsets (and so the raw text of entries) stay consistent.
func utf8Source(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(512)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("line 1: %w", err)
	}
	m := encodingDecl.FindSubmatch(head)
	if m == nil {
		return br, nil
	}
	switch strings.ToLower(string(m[1])) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return br, nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1":
		return charmap.ISO8859_1.NewDecoder().Reader(br), nil
	case "iso-8859-15", "iso8859-15", "latin9":
		return charmap.ISO8859_15.NewDecoder().Reader(br), nil
	case "windows-1252", "cp1252":
		return charmap.Windows1252.NewDecoder().Reader(br), nil
	}
	return nil, fmt.Errorf("line 1: unsupported XML encoding %q (convert the file to UTF-8)", m[1])
}

// parser walks one document.
type parser struct {
	ctx  context.Context
	dec  *xml.Decoder
	tape *tape
	sink reconcile.RowSink
	// pinned keeps the tape from forgetting the current entry's bytes while
	// it is decoded child by child.
	pinned bool
	rows   int
	line   int // line on which the last token read started
}

// next returns the next token and the line and offset where it starts. Each
// token starts where the previous one ended, so the position before reading
// is the token's start.
func (p *parser) next() (xml.Token, int, int64, error) {
	off := p.dec.InputOffset()
	p.line, _ = p.dec.InputPos()
	if !p.pinned {
		p.tape.keep = off
	}
	p.tape.bound(false)
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.line, off, p.fatal(err)
	}
	return tok, p.line, off, nil
}

// fatal turns a decoder error into a whole-input error with its line.
func (p *parser) fatal(err error) error {
	var se *xml.SyntaxError
	switch {
	case errors.Is(err, errTooLong):
		return fmt.Errorf("line %d: an XML element or text starting on this line is longer than %s, the bound on one: %s",
			p.line, tabular.FormatBytes(int64(maxToken)), notStatement)
	case errors.Is(err, errMarkup):
		return fmt.Errorf("line %d: an XML element starting on this line holds more than %d tags, the bound on one that is read whole: %s",
			p.line, maxMarkup, notStatement)
	case errors.As(err, &se):
		if se.Msg == "unexpected EOF" {
			return fmt.Errorf("line %d: document ends too early (truncated, or still being written: run again when it is complete): %w", se.Line, err)
		}
		return fmt.Errorf("line %d: malformed XML: %w", se.Line, err)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("line %d: document ends too early (truncated, or still being written: run again when it is complete): %w", p.line, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("line %d: %w", p.line, err)
}

// children calls fn for each child element of the element just started; fn
// must consume the child. It returns after the element's end tag.
func (p *parser) children(fn func(se xml.StartElement, line int, off int64) error) error {
	for {
		tok, line, off, err := p.next()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := fn(t, line, off); err != nil {
				return err
			}
		case xml.EndElement:
			return nil
		}
	}
}

// notStatement ends the message of a document over the decoder's bounds.
const notStatement = "the file is corrupt, or not a bank statement"

// decode reads the element se into v.
func (p *parser) decode(v any, se xml.StartElement) error {
	p.tape.bound(true)
	if err := p.dec.DecodeElement(v, &se); err != nil {
		return p.fatal(err)
	}
	return nil
}

// skip reads past the end of the element just started, as Decoder.Skip
// does, but a token at a time within the tape's bounds and at most
// maxDepth deep.
func (p *parser) skip() error {
	for depth := 1; depth > 0; {
		p.line, _ = p.dec.InputPos()
		p.tape.bound(false)
		tok, err := p.dec.Token()
		if err != nil {
			return p.fatal(err)
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxDepth {
				return fmt.Errorf("line %d: XML elements nested more than %d deep: %s", p.line, maxDepth, notStatement)
			}
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// document finds the root and walks the statements in it.
func (p *parser) document() error {
	for {
		tok, line, _, err := p.next()
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("line %d: not a camt.053 document: no XML element found", line)
			}
			return err
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(bytes.TrimPrefix(t, []byte("\ufeff")))) > 0 {
				return fmt.Errorf("line %d: not a camt.053 document: text before the first XML element", line)
			}
		case xml.StartElement:
			return p.root(t, line)
		}
	}
}

func (p *parser) root(se xml.StartElement, line int) error {
	if ns := se.Name.Space; ns != "" && !strings.HasPrefix(ns, namespacePrefix) {
		return fmt.Errorf("line %d: not a camt.053 document: namespace %q", line, ns)
	}
	switch se.Name.Local {
	case "BkToCstmrStmt":
		return p.statements()
	case "Document":
	default:
		return fmt.Errorf("line %d: not a camt.053 document: root element <%s>", line, se.Name.Local)
	}
	found := false
	err := p.children(func(se xml.StartElement, line int, _ int64) error {
		if se.Name.Local != "BkToCstmrStmt" {
			return fmt.Errorf("line %d: not a camt.053 document: <%s> where <BkToCstmrStmt> was expected", line, se.Name.Local)
		}
		found = true
		return p.statements()
	})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("line %d: not a camt.053 document: <BkToCstmrStmt> missing", p.line)
	}
	return nil
}

// statements walks the children of BkToCstmrStmt. The schema requires at
// least one Stmt, and a bank with nothing to report for a day still sends one
// with its balances; a group header alone is an export cut short or failed,
// so it is an unreadable input rather than a day without entries.
func (p *parser) statements() error {
	var hdr struct {
		CreDtTm string `xml:"CreDtTm"`
	}
	found := false
	err := p.children(func(se xml.StartElement, _ int, _ int64) error {
		switch se.Name.Local {
		case "GrpHdr":
			return p.decode(&hdr, se)
		case "Stmt":
			found = true
			return p.statement(hdr.CreDtTm)
		}
		return p.skip()
	})
	if err == nil && !found {
		err = fmt.Errorf("line %d: not a readable statement: <BkToCstmrStmt> holds no <Stmt> (a day without entries still has its <Stmt>): the export is incomplete, fetch it again", p.line)
	}
	return err
}

// statement holds what a Stmt says about all its entries.
type statement struct {
	id      string
	account string
	// The statement's own dates as written, for an entry that has neither
	// a booking nor a value date: Stmt/FrToDt/ToDtTm, Stmt/CreDtTm and the
	// group header's GrpHdr/CreDtTm. The schema puts them all before the
	// first entry.
	periodEnd, created, msgCreated string
	// seen counts the transaction ids given so far in this statement. A
	// statement lists each entry once, so an id seen again belongs to a
	// different entry and gets an occurrence suffix rather than merging with
	// the first one downstream.
	seen map[string]int
}

// statement walks one Stmt; msgCreated is the group header's CreDtTm.
func (p *parser) statement(msgCreated string) error {
	st := &statement{msgCreated: msgCreated, seen: make(map[string]int)}
	return p.children(func(se xml.StartElement, line int, off int64) error {
		switch se.Name.Local {
		case "Id":
			return p.decode(&st.id, se)
		case "CreDtTm":
			return p.decode(&st.created, se)
		case "FrToDt":
			var period struct {
				ToDtTm string `xml:"ToDtTm"`
			}
			if err := p.decode(&period, se); err != nil {
				return err
			}
			st.periodEnd = period.ToDtTm
			return nil
		case "Acct":
			var a account
			if err := p.decode(&a, se); err != nil {
				return err
			}
			st.account = a.id()
			return nil
		case "Bal":
			var b balance
			if err := p.decode(&b, se); err != nil {
				return err
			}
			if err := p.count(); err != nil {
				return err
			}
			return p.sink.Ignore(line, b.reason())
		case "Ntry":
			return p.entry(st, line, off)
		}
		return p.skip()
	})
}

// count notes one more row and checks the context now and then.
func (p *parser) count() error {
	p.rows++
	if p.rows%4096 == 0 {
		if err := p.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// entry decodes one Ntry child by child. The entry's own fields come before
// NtryDtls in every version of the schema, so the transactions of a batch can
// be given their outcome as soon as each is read, and a batch of any size is
// never held in memory at once.
func (p *parser) entry(st *statement, line int, off int64) error {
	e := &entry{}
	var first *txRow
	n := 0
	p.pinned = true
	err := p.children(func(se xml.StartElement, _ int, _ int64) error {
		if se.Name.Local != "NtryDtls" {
			if f := e.field(se.Name.Local); f != nil {
				return p.decode(f, se)
			}
			return p.skip()
		}
		return p.children(func(se xml.StartElement, line int, off int64) error {
			switch se.Name.Local {
			case "Btch":
				return p.decode(&e.Btch, se)
			case "TxDtls":
			default:
				return p.skip()
			}
			row := &txRow{tx: new(txDtls), name: "TxDtls", line: line, start: off}
			if err := p.decode(row.tx, se); err != nil {
				return err
			}
			row.end = p.dec.InputOffset()
			n++
			switch n {
			case 1:
				first = row
				return nil
			case 2:
				// Now a batch: the entry's own text is no longer needed.
				p.pinned = false
				if err := p.emit(st, e, first, 1); err != nil {
					return err
				}
			}
			return p.emit(st, e, row, n)
		})
	})
	p.pinned = false
	if err != nil || n >= 2 {
		return err
	}
	row := &txRow{name: "Ntry", line: line, start: off, end: p.dec.InputOffset()}
	if first != nil {
		row.tx = first.tx
	}
	return p.emit(st, e, row, 0)
}

// raw returns the row's text, or a note when the element was too large to
// keep.
func (p *parser) raw(row *txRow) string {
	if s, ok := p.tape.text(row.start, row.end); ok {
		return s
	}
	return fmt.Sprintf("<%s> element of %d bytes starting on line %d (too large to keep)", row.name, row.end-row.start, row.line)
}

// emit gives one row its outcome. index is 0 for an entry row and the
// 1-based position of the transaction in a batch entry otherwise.
func (p *parser) emit(st *statement, e *entry, row *txRow, index int) error {
	if err := p.count(); err != nil {
		return err
	}
	ev, ignore, reject := build(st, e, row.tx, index)
	switch {
	case ignore != "":
		return p.sink.Ignore(row.line, ignore)
	case reject != "":
		return p.sink.Reject(row.line, p.raw(row), reject)
	}
	ev.Line = row.line
	ev.Raw = p.raw(row)
	return p.sink.Evidence(ev)
}
