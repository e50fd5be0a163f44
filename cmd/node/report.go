package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/zlink-go/zlink/wire"
)

// report collects the results of `request` and prints them: per-request
// lines only with --lines, one line per error kind, and the summary; text
// or, with --json, one JSON object per line on every path.
type report struct {
	w      io.Writer
	asJSON bool
	lines  bool
	count  int

	mu      sync.Mutex
	ok, bad int
	byRID   map[string]int
	byErr   map[string]*errorKind
	enc     *json.Encoder
}

// errorKind counts one wire error kind and keeps its first message.
type errorKind struct {
	Count   int    `json:"count"`
	Message string `json:"message"`
}

// ridShare is one node's part of the successful requests.
type ridShare struct {
	Calls    int     `json:"calls"`
	SharePct float64 `json:"share_pct"`
	Weight   *uint16 `json:"weight,omitempty"` // the Server weight last seen; absent when unknown
}

// summaryJSON is the last line of `request --json`.
type summaryJSON struct {
	Summary bool                  `json:"summary"` // always true: tells the summary from result lines
	OK      int                   `json:"ok"`
	Errors  int                   `json:"errors"`
	ByRID   map[string]ridShare   `json:"by_rid"`
	ByError map[string]*errorKind `json:"by_error,omitempty"`
	// Error says why nothing could be sent (the Location Store is
	// unreachable, the node could not start); the process also exits 1
	// with the same text on stderr.
	Error string `json:"error,omitempty"`
}

func newReport(w io.Writer, f *requestFlags) *report {
	return &report{w: w, asJSON: f.asJSON, lines: f.lines, count: f.count,
		byRID: map[string]int{}, byErr: map[string]*errorKind{}, enc: json.NewEncoder(w)}
}

// add records one result (and prints its line with --lines).
func (r *report) add(res resultLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res.OK {
		r.ok++
		r.byRID[res.RID]++
	} else {
		r.bad++
		res.Message = cliText(res.Message)
		k := r.byErr[res.Error]
		if k == nil {
			k = &errorKind{Message: res.Message}
			r.byErr[res.Error] = k
		}
		k.Count++
	}
	if !r.lines {
		return
	}
	switch {
	case r.asJSON:
		_ = r.enc.Encode(res)
	case res.OK:
		fmt.Fprintf(r.w, "ok rid=%s\n", res.RID)
	default:
		fmt.Fprintf(r.w, "error %s\n", res.Error)
	}
}

// noTarget ends a run that sent nothing: every request is a no_target
// error whose message says why.
func (r *report) noTarget(why string) {
	r.mu.Lock()
	r.bad = r.count
	r.byErr[wire.CodeNoTarget.String()] = &errorKind{Count: r.count, Message: why}
	r.mu.Unlock()
	r.summary(nil)
}

// summary prints the error kinds (text mode, without --lines) and the
// summary line. weights are the Server weights by RID, when known.
func (r *report) summary(weights map[string]uint16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rids := make([]string, 0, len(r.byRID))
	for rid := range r.byRID {
		rids = append(rids, rid)
	}
	sort.Strings(rids)
	shares := make(map[string]ridShare, len(rids))
	for _, rid := range rids {
		s := ridShare{Calls: r.byRID[rid], SharePct: pct(r.byRID[rid], r.ok)}
		if w, ok := weights[rid]; ok {
			s.Weight = &w
		}
		shares[rid] = s
	}
	if r.asJSON {
		out := summaryJSON{Summary: true, OK: r.ok, Errors: r.bad, ByRID: shares}
		if len(r.byErr) > 0 {
			out.ByError = r.byErr
		}
		_ = r.enc.Encode(out)
		return
	}
	if !r.lines {
		kinds := make([]string, 0, len(r.byErr))
		for k := range r.byErr {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			fmt.Fprintf(r.w, "error %s count=%d message=%s\n", k, r.byErr[k].Count, strconv.Quote(r.byErr[k].Message))
		}
	}
	parts := make([]string, len(rids))
	for i, rid := range rids {
		s := shares[rid]
		parts[i] = fmt.Sprintf("%s:%d(%.1f%%", rid, s.Calls, s.SharePct)
		if s.Weight != nil {
			parts[i] += ",weight=" + strconv.Itoa(int(*s.Weight))
		}
		parts[i] += ")"
	}
	fmt.Fprintf(r.w, "summary ok=%d errors=%d by_rid=%s\n", r.ok, r.bad, strings.Join(parts, ","))
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) * 100 / float64(of)
}

// failed ends a --json run that could not send anything with a summary
// that says why.
func (r *report) failed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.enc.Encode(summaryJSON{Summary: true, Errors: r.count, ByRID: map[string]ridShare{}, Error: cliText(err.Error())})
}
