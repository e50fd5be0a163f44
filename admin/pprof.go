package admin

import (
	"fmt"
	"net/http"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"
)

// The Go runtime's profiles (Options.Pprof), written with runtime/pprof
// and runtime/trace. The package does not import net/http/pprof: that one
// registers itself on http.DefaultServeMux, which an embedder may serve
// elsewhere.

// maxProfileSeconds bounds ?seconds=N of a CPU profile or a trace.
const maxProfileSeconds = 60

// pprofProfiles are the named profiles GET /debug/pprof/NAME writes.
var pprofProfiles = []string{"heap", "goroutine", "allocs", "block", "mutex", "threadcreate"}

// pprofRoutes registers /debug/pprof/…: like the mutating endpoints they
// need the token when one is set (a profile reveals memory contents and
// costs CPU), and like every endpoint the host check.
func (a *API) pprofRoutes(rt *routeTable) {
	rt.handleFunc("GET", "/debug/pprof/{$}", a.profile(getPprofIndex))
	rt.handleFunc("GET", "/debug/pprof/profile", a.profile(longWrite(getCPUProfile)))
	rt.handleFunc("GET", "/debug/pprof/trace", a.profile(longWrite(getTrace)))
	for _, name := range pprofProfiles {
		rt.handleFunc("GET", "/debug/pprof/"+name, a.profile(getNamedProfile(name)))
	}
}

// profile wraps a profile endpoint: the token when one is set.
func (a *API) profile(h http.HandlerFunc) http.HandlerFunc {
	if len(a.opts.Token) == 0 {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.hasToken(r) {
			unauthorized(w)
			return
		}
		h(w, r)
	}
}

func getPprofIndex(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "profile?seconds=N  CPU profile (default 30, at most 60)")
	fmt.Fprintln(w, "trace?seconds=N    execution trace (default 1, at most 60)")
	for _, name := range pprofProfiles {
		fmt.Fprintf(w, "%-18s %d\n", name, pprof.Lookup(name).Count())
	}
}

// profileSeconds reads ?seconds=N (1..maxProfileSeconds, default def).
func profileSeconds(r *http.Request, def int) (time.Duration, error) {
	s := r.URL.Query().Get("seconds")
	if s == "" {
		return time.Duration(def) * time.Second, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxProfileSeconds {
		return 0, fmt.Errorf("seconds %q: want an integer 1..%d", s, maxProfileSeconds)
	}
	return time.Duration(n) * time.Second, nil
}

// sleepFor waits d or until the client goes away.
func sleepFor(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

func getCPUProfile(w http.ResponseWriter, r *http.Request) {
	d, err := profileSeconds(r, 30)
	if err != nil {
		writeErrCode(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="profile"`)
	if err := pprof.StartCPUProfile(w); err != nil {
		w.Header().Del("Content-Disposition")
		writeErrCode(w, http.StatusConflict, "busy", fmt.Errorf("admin: cpu profile: %w", err))
		return
	}
	sleepFor(r, d)
	pprof.StopCPUProfile()
}

func getTrace(w http.ResponseWriter, r *http.Request) {
	d, err := profileSeconds(r, 1)
	if err != nil {
		writeErrCode(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="trace"`)
	if err := trace.Start(w); err != nil {
		w.Header().Del("Content-Disposition")
		writeErrCode(w, http.StatusConflict, "busy", fmt.Errorf("admin: trace: %w", err))
		return
	}
	sleepFor(r, d)
	trace.Stop()
}

func getNamedProfile(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		debug := 0
		if r.URL.Query().Get("debug") == "1" {
			debug = 1
		}
		if debug == 0 {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
		} else {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		_ = pprof.Lookup(name).WriteTo(w, debug)
	}
}
