// Package admin is the admin HTTP API of a process that runs ZLink: the
// one `zlink-node run` serves and any game process can mount, so that
// every `zlink-node` admin command (status, tree, weight, drain, undrain,
// spot-owner, spot-reminders, relocate, spot-move) and the live dashboard
// work against it.
//
//	api := admin.Handler(host, admin.Options{Token: token, Logger: log})
//	srv := admin.NewServer(api) // every timeout set
//	go srv.Serve(ln)
//
// or mounted on an existing mux under a prefix:
//
//	mux.Handle("/zlink/", admin.Handler(host, admin.Options{Prefix: "/zlink"}))
//
// Endpoints (relative to Options.Prefix):
//
//	GET  /status[?mesh=NAME]           routemesh.Status of one mesh, with the Location Store's counters
//	GET  /tree                         the supervision tree (supervisor.Node)
//	GET  /spots[?mesh=&kind=&list=N]   the Spot runtime of each mesh (spot.Stats), IDs on request
//	GET  /spots/owner?kind=K&id=ID     who owns a Spot (spot.Owner): reads the store, claims nothing
//	GET  /spots/reminders?kind=K&id=ID a Spot's durable reminders (spot.Reminders): reads the store, activates nothing
//	GET  /healthz, /readyz             liveness and readiness (zlink.Host.Health)
//	GET  /metrics                      Prometheus (package metrics) plus Options.Collectors
//	GET  /ui/                          the live dashboard; /ui/snapshot, /ui/events (server-sent events)
//	POST /weight                       {"channel","weight"[,"mesh"]}: Node.SetWeight
//	POST /drain[?timeout=D]            drain every mesh (persistent Spots move away)
//	POST /undrain                      undo a drain
//	POST /relocate?to=RID              spot.Relocate: every persistent Spot to another Object Server
//	POST /spots/move?kind=&id=&to=RID  spot.Move of one Spot
//	POST /spots/reminders?kind=&id=    {"name","period","in"|"due","payload"}: spot.RegisterReminder
//	POST /spots/reminders/cancel?kind=&id=&name=
//	                                   spot.CancelReminder
//	GET  /debug/pprof/…                Go runtime profiles (Options.Pprof only)
//
// Who may do what: the POST endpoints change the node. With Options.Token
// they need it as a bearer token (Options.ProtectReads extends that to
// every read but the health probes); Options.ReadOnly refuses them all.
// Without a token, only requests whose Host is loopback, localhost or in
// Options.AllowedHosts are served at all, GETs too (DNS rebinding), and
// CheckExposure tells a caller about to listen on a reachable address.
// Every POST needs Content-Type: application/json, body or not, and an
// Origin header, when present, must be the admin's own or in
// Options.AllowedOrigins: a web page open in a browser on the same
// machine cannot drain the node. Refusals are JSON (ErrorResponse) with a
// stable code; bodies are bounded and must be one JSON object of the
// endpoint's fields.
//
// It owns only the translation between HTTP and the public API of the
// root package, routemesh, spot, location and metrics: everything it shows
// comes from Node.Status, Host.Tree, Host.Health, spot.StatsOf,
// spot.Active, spot.Owner, spot.Reminders and the store's Stats
// snapshots. It must not reach into runtime internals, start or stop the
// host, read or write the store beyond spot.Owner's single record read
// and the reminder calls (one read or write of one Spot's reminders) per
// request, or touch global
// state: it registers nothing on http.DefaultServeMux or the default
// Prometheus registry (its /metrics has a registry of its own) and does
// not import net/http/pprof.
package admin
