package camt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"reconcile"
)

// The element types below hold what the parser reads of a statement. Every
// value is kept as text and checked by build, so that a bad value rejects its
// row instead of failing the whole document. Paths such as "Domn>Cd" cover
// the versions at once: where v08 moved a value (Sts/Cd, Dbtr/Pty/Nm) both
// places are read.

type amount struct {
	Value string `xml:",chardata"`
	Ccy   string `xml:"Ccy,attr"`
}

type date struct {
	Dt   string `xml:"Dt"`
	DtTm string `xml:"DtTm"`
}

// status is <Sts>BOOK</Sts> up to v07 and <Sts><Cd>BOOK</Cd></Sts> from v08.
type status struct {
	Text  string `xml:",chardata"`
	Cd    string `xml:"Cd"`
	Prtry string `xml:"Prtry"`
}

func (s status) code() string {
	for _, c := range []string{s.Cd, s.Prtry, s.Text} {
		if c = strings.TrimSpace(c); c != "" {
			return strings.ToUpper(c)
		}
	}
	return ""
}

type bankCode struct {
	Domain    string `xml:"Domn>Cd"`
	Family    string `xml:"Domn>Fmly>Cd"`
	SubFamily string `xml:"Domn>Fmly>SubFmlyCd"`
	Prtry     string `xml:"Prtry>Cd"`
}

// String returns the code as a RawKind: "PMNT/RCDT/ESCT", else the
// proprietary code, else "".
func (c bankCode) String() string {
	if d := strings.TrimSpace(c.Domain); d != "" {
		return d + "/" + strings.TrimSpace(c.Family) + "/" + strings.TrimSpace(c.SubFamily)
	}
	return strings.TrimSpace(c.Prtry)
}

// charges is one Chrgs element: up to v02 it repeats, one amount each; from
// v04 it holds a total and records.
type charges struct {
	Total   *amount  `xml:"TtlChrgsAndTaxAmt"`
	Amt     []amount `xml:"Amt"`
	Records []amount `xml:"Rcrd>Amt"`
}

type batch struct {
	MsgID    string `xml:"MsgId"`
	PmtInfID string `xml:"PmtInfId"`
}

type refs struct {
	MsgID       string `xml:"MsgId"`
	AcctSvcrRef string `xml:"AcctSvcrRef"`
	PmtInfID    string `xml:"PmtInfId"`
	InstrID     string `xml:"InstrId"`
	EndToEndID  string `xml:"EndToEndId"`
	TxID        string `xml:"TxId"`
	MndtID      string `xml:"MndtId"`
}

type party struct {
	Name    string `xml:"Nm"`
	PtyName string `xml:"Pty>Nm"`
}

func (p party) name() string {
	if n := strings.TrimSpace(p.Name); n != "" {
		return n
	}
	return strings.TrimSpace(p.PtyName)
}

// txDtls is one transaction of an entry.
type txDtls struct {
	Refs         refs      `xml:"Refs"`
	Amt          *amount   `xml:"Amt"`               // v04+
	TxAmt        *amount   `xml:"AmtDtls>TxAmt>Amt"` // every version
	CdtDbtInd    string    `xml:"CdtDbtInd"`         // v04+
	Chrgs        []charges `xml:"Chrgs"`
	Debtor       party     `xml:"RltdPties>Dbtr"`
	Creditor     party     `xml:"RltdPties>Cdtr"`
	UltDebtor    party     `xml:"RltdPties>UltmtDbtr"`
	UltCreditor  party     `xml:"RltdPties>UltmtCdtr"`
	Ustrd        []string  `xml:"RmtInf>Ustrd"`
	CreditorRefs []string  `xml:"RmtInf>Strd>CdtrRefInf>Ref"`
	AddtlTxInf   string    `xml:"AddtlTxInf"`
	Return       rtrInf    `xml:"RtrInf"`
}

// rtrInf is a returned transaction's reason: an ISO external return reason
// code (MD06, AC04, ...) or a proprietary one, and free text.
type rtrInf struct {
	Cd       string   `xml:"Rsn>Cd"`
	Prtry    string   `xml:"Rsn>Prtry"`
	AddtlInf []string `xml:"AddtlInf"`
}

// entry is an Ntry without its NtryDtls, which the parser walks itself.
type entry struct {
	NtryRef      string
	Amt          *amount
	CdtDbtInd    string
	RvslInd      string
	Sts          status
	BookgDt      *date
	ValDt        *date
	AcctSvcrRef  string
	BkTxCd       bankCode
	Chrgs        []charges
	Btch         batch
	AddtlNtryInf string
}

// field returns where the entry's child element name is decoded to, or nil
// for the children that are not read.
func (e *entry) field(name string) any {
	switch name {
	case "NtryRef":
		return &e.NtryRef
	case "Amt":
		return &e.Amt
	case "CdtDbtInd":
		return &e.CdtDbtInd
	case "RvslInd":
		return &e.RvslInd
	case "Sts":
		return &e.Sts
	case "BookgDt":
		return &e.BookgDt
	case "ValDt":
		return &e.ValDt
	case "AcctSvcrRef":
		return &e.AcctSvcrRef
	case "BkTxCd":
		return &e.BkTxCd
	case "Chrgs":
		return &e.Chrgs
	case "AddtlNtryInf":
		return &e.AddtlNtryInf
	}
	return nil
}

// txRow is one row: an entry, or one transaction of a batch entry, with where
// its element starts and ends in the input.
type txRow struct {
	tx         *txDtls // nil for an entry without transaction details
	name       string  // Ntry or TxDtls
	line       int
	start, end int64
}

type account struct {
	IBAN  string `xml:"Id>IBAN"`
	Other string `xml:"Id>Othr>Id"`
}

func (a account) id() string {
	if s := strings.TrimSpace(a.IBAN); s != "" {
		return s
	}
	return strings.TrimSpace(a.Other)
}

type balance struct {
	Code      string `xml:"Tp>CdOrPrtry>Cd"`
	Prtry     string `xml:"Tp>CdOrPrtry>Prtry"`
	Amt       amount `xml:"Amt"`
	CdtDbtInd string `xml:"CdtDbtInd"`
	Dt        date   `xml:"Dt"`
}

var balanceNames = map[string]string{
	"OPBD": "opening booked balance",
	"CLBD": "closing booked balance",
	"OPAV": "opening available balance",
	"CLAV": "closing available balance",
	"FWAV": "forward available balance",
	"PRCD": "previously closed booked balance",
	"ITBD": "interim booked balance",
	"ITAV": "interim available balance",
	"XPCD": "expected balance",
	"INFO": "information balance",
}

// reason says which balance the row is, with its amount, for the report.
func (b balance) reason() string {
	code := strings.ToUpper(strings.TrimSpace(b.Code))
	if code == "" {
		code = strings.TrimSpace(b.Prtry)
	}
	name := balanceNames[code]
	if name == "" {
		name = "balance"
	}
	amt := strings.TrimSpace(b.Amt.Value)
	if strings.TrimSpace(b.CdtDbtInd) == "DBIT" {
		amt = "-" + amt
	}
	when := strings.TrimSpace(b.Dt.Dt + b.Dt.DtTm)
	return strings.TrimSpace(fmt.Sprintf("%s %s: %s %s on %s, not a transaction", name, code, amt, strings.TrimSpace(b.Amt.Ccy), when))
}

// clean trims a reference and treats the placeholder NOTPROVIDED as absent.
func clean(s string) string {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "NOTPROVIDED") {
		return ""
	}
	return s
}

// build turns a row into evidence, or says why it is ignored or rejected.
// index is 0 for an entry row (tx is then its single TxDtls, or nil) and the
// 1-based position of tx in a batch entry otherwise.
//
// An entry without a status is read as booked: Sts is mandatory in the
// schema, but some banks leave it out of statements that list only booked
// entries, and nothing else in a camt.053 statement gives a status. Its
// evidence says so in Metadata["camt_note"], as it does when the time is not
// the entry's booking date.
func build(st *statement, e *entry, tx *txDtls, index int) (ev *reconcile.Evidence, ignore, reject string) {
	pending := false
	var notes []string
	switch sts := e.Sts.code(); sts {
	case "BOOK":
	case "PDNG", "FUTR":
		pending = true
	case "INFO":
		return nil, "information-only entry (Sts INFO), not booked", ""
	case "":
		notes = append(notes, "no Sts: read as booked")
	default:
		return nil, "", fmt.Sprintf("entry status (Sts) %q is not BOOK, PDNG or INFO", sts)
	}
	if tx == nil {
		tx = &txDtls{}
	}
	// The identity is taken before any check, so that a rejected row still
	// counts as an occurrence and the ids of the rows after it do not depend
	// on whether it was valid.
	id, occurrence := txID(st, e, tx, index)
	for _, r := range []struct{ path, v string }{
		{"TxDtls/Refs/AcctSvcrRef", tx.Refs.AcctSvcrRef},
		{"TxDtls/Refs/EndToEndId", tx.Refs.EndToEndID},
		{"Ntry/AcctSvcrRef", e.AcctSvcrRef},
		{"Ntry/NtryRef", e.NtryRef},
	} {
		if v := strings.TrimSpace(r.v); v != "" && v[0] >= '0' && v[0] <= '9' && reconcile.Mangled(v) {
			return nil, "", fmt.Sprintf("%s %q is in scientific notation: a spreadsheet mangled the reference and the original is lost", r.path, v)
		}
	}

	amt, amtPath := e.Amt, "Ntry/Amt"
	dir, dirPath := e.CdtDbtInd, "Ntry/CdtDbtInd"
	if index > 0 {
		switch {
		case tx.Amt != nil:
			amt, amtPath = tx.Amt, "TxDtls/Amt"
		case tx.TxAmt != nil:
			amt, amtPath = tx.TxAmt, "TxDtls/AmtDtls/TxAmt/Amt"
		default:
			return nil, "", "batch transaction has no amount (TxDtls/Amt or TxDtls/AmtDtls/TxAmt/Amt)"
		}
		if strings.TrimSpace(tx.CdtDbtInd) != "" {
			dir, dirPath = tx.CdtDbtInd, "TxDtls/CdtDbtInd"
		}
	}
	if amt == nil {
		return nil, "", "entry has no amount (Ntry/Amt)"
	}
	money, err := parseAmount(amt, amtPath)
	if err != nil {
		return nil, "", err.Error()
	}
	var credit bool
	switch d := strings.TrimSpace(dir); d {
	case "CRDT":
		credit = true
	case "DBIT":
		money.Minor = -money.Minor
	case "":
		return nil, "", dirPath + " (credit or debit) is missing"
	default:
		return nil, "", fmt.Sprintf("%s %q is neither CRDT nor DBIT", dirPath, d)
	}
	var reversal bool
	switch r := strings.ToLower(strings.TrimSpace(e.RvslInd)); r {
	case "true", "1":
		reversal = true
	case "false", "0", "":
	default:
		return nil, "", fmt.Sprintf("Ntry/RvslInd %q is not true or false", e.RvslInd)
	}

	when, valueDate, note, err := entryTime(st, e)
	if err != nil {
		return nil, "", err.Error()
	}
	if note != "" {
		notes = append(notes, note)
	}

	chrgs := tx.Chrgs
	if len(chrgs) == 0 && index == 0 {
		chrgs = e.Chrgs
	}
	fee, otherCharges, err := sumCharges(chrgs, money.Currency)
	if err != nil {
		return nil, "", err.Error()
	}

	meta := map[string]string{}
	put := func(k, v string) {
		if v = clean(v); v != "" {
			meta[k] = v
		}
	}
	put("account", st.account)
	put("statement_id", st.id)
	put("entry_ref", e.NtryRef)
	put("entry_acct_svcr_ref", e.AcctSvcrRef)
	put("acct_svcr_ref", tx.Refs.AcctSvcrRef)
	put("end_to_end_id", tx.Refs.EndToEndID)
	put("tx_id", tx.Refs.TxID)
	put("instr_id", tx.Refs.InstrID)
	put("pmt_inf_id", tx.Refs.PmtInfID)
	put("msg_id", tx.Refs.MsgID)
	put("mndt_id", tx.Refs.MndtID)
	put("batch_msg_id", e.Btch.MsgID)
	put("batch_pmt_inf_id", e.Btch.PmtInfID)
	if len(tx.CreditorRefs) > 0 {
		put("creditor_ref", tx.CreditorRefs[0])
	}
	put("debtor", tx.Debtor.name())
	put("creditor", tx.Creditor.name())
	put("ultimate_debtor", tx.UltDebtor.name())
	put("ultimate_creditor", tx.UltCreditor.name())
	if !valueDate.IsZero() {
		meta["value_date"] = valueDate.Format(time.DateOnly)
	}
	put("other_charges", otherCharges)
	if r := clean(tx.Return.Cd); r != "" {
		put("return_reason", r)
		put("return_reason_prtry", tx.Return.Prtry)
	} else {
		put("return_reason", tx.Return.Prtry)
	}
	put("return_info", strings.Join(trimAll(tx.Return.AddtlInf), " "))
	if len(notes) > 0 {
		meta["camt_note"] = strings.Join(notes, "; ")
	}
	if occurrence > 1 {
		meta["ref_occurrence"] = strconv.Itoa(occurrence)
	}

	kind, rawKind := kindOf(e.BkTxCd, credit), e.BkTxCd.String()
	if p := strings.TrimSpace(e.BkTxCd.Prtry); p != rawKind {
		put("bank_prtry_code", p)
	}
	if rawKind == "" {
		rawKind = strings.TrimSpace(dir)
	}
	if reversal {
		put("bank_tx_code", e.BkTxCd.String())
		meta["reversal"] = "true"
		kind, rawKind = reconcile.KindAdjustment, "reversal"
	}

	desc := strings.TrimSpace(strings.Join(trimAll(tx.Ustrd), " "))
	if desc == "" {
		desc = strings.TrimSpace(tx.AddtlTxInf)
	}
	if index == 0 {
		if desc == "" {
			desc = strings.TrimSpace(e.AddtlNtryInf)
		} else {
			put("additional_info", e.AddtlNtryInf)
		}
	}

	return &reconcile.Evidence{
		Provider:    Provider,
		TxID:        id,
		Kind:        kind,
		RawKind:     rawKind,
		Amount:      money,
		Fee:         fee,
		Time:        when,
		Pending:     pending,
		EffectKey:   clean(tx.Refs.EndToEndID),
		Description: desc,
		Metadata:    meta,
	}, "", ""
}

// txID is the bank's reference for the row: the transaction's own
// AcctSvcrRef, else the entry's AcctSvcrRef, else its NtryRef, the last two
// suffixed "/<index>" for a transaction of a batch entry. A reference already
// given to an earlier row of the same statement is suffixed "#<occurrence>".
func txID(st *statement, e *entry, tx *txDtls, index int) (string, int) {
	id := clean(tx.Refs.AcctSvcrRef)
	if id == "" {
		id = clean(e.AcctSvcrRef)
		if id == "" {
			id = clean(e.NtryRef)
		}
		if id != "" && index > 0 {
			id += "/" + strconv.Itoa(index)
		}
	}
	if id == "" {
		return "", 0
	}
	st.seen[id]++
	n := st.seen[id]
	if n > 1 {
		return id + "#" + strconv.Itoa(n), n
	}
	return id, n
}

func trimAll(ss []string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseAmount reads an unsigned camt amount with its currency.
func parseAmount(a *amount, path string) (reconcile.Money, error) {
	cur, err := reconcile.NormalizeCurrency(a.Ccy)
	if err != nil {
		return reconcile.Money{}, fmt.Errorf("%s currency (Ccy): %w", path, err)
	}
	exp, err := reconcile.Exponent(Provider, cur)
	if err != nil {
		return reconcile.Money{}, fmt.Errorf("%s currency (Ccy): %w", path, err)
	}
	v := strings.TrimSpace(a.Value)
	if strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+") {
		return reconcile.Money{}, fmt.Errorf("%s %q has a sign; camt amounts are unsigned and CdtDbtInd gives the direction", path, v)
	}
	minor, err := reconcile.ParseMinor(v, exp, '.')
	if err != nil {
		return reconcile.Money{}, fmt.Errorf("%s (%s): %w", path, cur, err)
	}
	return reconcile.Money{Minor: minor, Currency: cur}, nil
}

// sumCharges adds up the charges in currency cur, as a positive cost in minor
// units. Charges in another currency cannot be a Fee of this amount; they are
// returned as text ("20.00 USD") for the metadata.
func sumCharges(cs []charges, cur string) (int64, string, error) {
	var fee int64
	var other []string
	for _, c := range cs {
		amts := append(append([]amount(nil), c.Amt...), c.Records...)
		if c.Total != nil {
			amts = []amount{*c.Total}
		}
		for _, a := range amts {
			m, err := parseAmount(&a, "Chrgs/Amt")
			if err != nil {
				return 0, "", err
			}
			if m.Currency != cur {
				other = append(other, strings.TrimSpace(a.Value)+" "+m.Currency)
				continue
			}
			if fee > math.MaxInt64-m.Minor {
				return 0, "", fmt.Errorf("Chrgs/Amt: the charges add up to more than can be counted")
			}
			fee += m.Minor
		}
	}
	return fee, strings.Join(other, ", "), nil
}
