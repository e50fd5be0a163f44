package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/admin"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

const (
	defaultMesh  = "default"
	defaultAdmin = "127.0.0.1:0"
	// stopTimeout bounds the graceful drain and the shutdown after a signal.
	stopTimeout = 30 * time.Second
)

type runFlags struct {
	config                            string
	mesh, listen, advertise           string
	rid, ridPrefix, location          string
	peers, servers, clients           []string
	object, secretFile, admin         string
	tokenFile                         string
	tls                               tlsFiles
	tlsSet                            [3]bool // --tls-ca, --tls-cert, --tls-key given
	logLevel, logFormat               string
	meshFlagsSet, adminSet, locSet    bool
	secretSet, logLevelSet, logFmtSet bool
}

// meshFlags are the flags that describe the single mesh of a flag-only run.
var meshFlags = []string{"mesh", "listen", "advertise", "rid", "rid-prefix", "peer", "server", "client", "object"}

func newRunCmd() *cobra.Command {
	f := &runFlags{}
	c := &cobra.Command{
		Use:   "run [--config FILE] [flags]",
		Short: "Run one node until SIGINT/SIGTERM (drain, then shutdown)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, n := range meshFlags {
				f.meshFlagsSet = f.meshFlagsSet || cmd.Flags().Changed(n)
			}
			fl := cmd.Flags()
			f.adminSet, f.locSet, f.secretSet = fl.Changed("admin"), fl.Changed("location"), fl.Changed("secret-file")
			f.logLevelSet, f.logFmtSet = fl.Changed("log-level"), fl.Changed("log-format")
			f.tlsSet = [3]bool{fl.Changed("tls-ca"), fl.Changed("tls-cert"), fl.Changed("tls-key")}
			cfg, err := f.resolve()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runNode(ctx, cfg, cmd)
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.config, "config", "", "YAML config file (same settings and more, including several meshes)")
	fs.StringVar(&f.mesh, "mesh", defaultMesh, "MeshName")
	fs.StringVar(&f.listen, "listen", "tcp://127.0.0.1:0", "ROUTER endpoint to bind")
	fs.StringVar(&f.advertise, "advertise", "", "host peers should dial when it differs from the bind address")
	fs.StringVar(&f.rid, "rid", "", "fixed RID (manual topology)")
	fs.StringVar(&f.ridPrefix, "rid-prefix", "", "RID prefix (automatic topology; requires --location redis://…)")
	fs.StringVar(&f.location, "location", "none", "Location Store: none, "+redisURLForms)
	fs.StringArrayVar(&f.peers, "peer", nil, "manual peer ENDPOINT[#RID] (repeatable)")
	fs.StringArrayVar(&f.servers, "server", nil, "Server role CHANNEL[=WEIGHT] (repeatable)")
	fs.StringArrayVar(&f.clients, "client", nil, "Client role CHANNEL (repeatable)")
	fs.StringVar(&f.object, "object", "none", "object role: none, client or server")
	fs.StringVar(&f.secretFile, "secret-file", "", "shared-secret file of the trust profile (authenticates peers; traffic stays in clear without --tls-*)")
	fs.StringVar(&f.tls.CA, "tls-ca", "", "mesh-link TLS: PEM CA bundle peers' certificates must chain to (with --tls-cert and --tls-key)")
	fs.StringVar(&f.tls.Cert, "tls-cert", "", "mesh-link TLS: this node's PEM certificate; its URI SAN (or CN) is the identity every peer must share")
	fs.StringVar(&f.tls.Key, "tls-key", "", "mesh-link TLS: this node's PEM private key")
	fs.StringVar(&f.tokenFile, "admin-token-file", "", "admin bearer token file: the endpoints that change the node (weight, drain, undrain, relocate, spots/move) need the token (required when --admin is not a loopback address)")
	fs.StringVar(&f.admin, "admin", defaultAdmin, "admin HTTP address")
	fs.StringVar(&f.logLevel, "log-level", "warn", "log level: trace, debug, info, warn, error, disabled")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or console")
	return c
}

// resolve merges the config file and the flags: explicitly set flags win;
// mesh flags describe the single mesh when the file has none.
func (f *runFlags) resolve() (*fileConfig, error) {
	cfg := &fileConfig{}
	if f.config != "" {
		var err error
		if cfg, err = loadConfigFile(f.config); err != nil {
			return nil, err
		}
	}
	pick := func(dst *string, v string, set bool) {
		if set || *dst == "" {
			*dst = v
		}
	}
	pick(&cfg.Admin, f.admin, f.adminSet)
	pick(&cfg.Location, f.location, f.locSet)
	pick(&cfg.LogLevel, f.logLevel, f.logLevelSet)
	pick(&cfg.LogFormat, f.logFormat, f.logFmtSet)
	pick(&cfg.SecretFile, f.secretFile, f.secretSet)
	pick(&cfg.AdminTokenFile, f.tokenFile, f.tokenFile != "")
	pick(&cfg.TLS.CA, f.tls.CA, f.tlsSet[0])
	pick(&cfg.TLS.Cert, f.tls.Cert, f.tlsSet[1])
	pick(&cfg.TLS.Key, f.tls.Key, f.tlsSet[2])
	if len(cfg.Meshes) > 0 {
		if f.meshFlagsSet {
			return nil, usagef("mesh flags (--mesh, --listen, --server, …) cannot be combined with meshes in --config")
		}
		return cfg, nil
	}
	m := meshConfig{Name: f.mesh, Listen: f.listen, Advertise: f.advertise, RID: f.rid, RIDPrefix: f.ridPrefix,
		Peers: f.peers, Clients: f.clients, Object: f.object}
	for _, s := range f.servers {
		sc, err := parseServer(s)
		if err != nil {
			return nil, err
		}
		m.Servers = append(m.Servers, sc)
	}
	cfg.Meshes = []meshConfig{m}
	return cfg, nil
}

// redisURLForms is how a Redis Location Store is named on the command line.
const redisURLForms = "redis://HOST:PORT[/DB] or rediss://HOST:PORT[/DB]?ca=FILE[&cert=FILE&key=FILE] (TLS)"

func isRedisURL(u string) bool {
	return strings.HasPrefix(u, "redis://") || strings.HasPrefix(u, "rediss://")
}

// openStore opens the Location Store named by url ("none" → nil). log
// receives the store's warnings (a corrupt record, once per key).
func openStore(ctx context.Context, url string, log zerolog.Logger) (location.Store, error) {
	switch {
	case url == "" || url == "none":
		return nil, nil
	case isRedisURL(url):
		rc, err := location.ParseRedisURL(url)
		if err != nil {
			return nil, usagef("--location: " + err.Error())
		}
		rc.Logger = log.With().Str("component", "location").Logger()
		s, err := location.NewRedis(ctx, rc)
		if err != nil {
			return nil, fmt.Errorf("location store %s: %w", rc.Addr, err) // never the URL: it may hold a password
		}
		return s, nil
	default:
		return nil, usagef(fmt.Sprintf("--location %q: want none, %s", url, redisURLForms))
	}
}

// storeAddr names the Location Store of url in messages: its address,
// never the URL (it may hold a password).
func storeAddr(url string) string {
	if rc, err := location.ParseRedisURL(url); err == nil {
		return rc.Addr
	}
	return "(unparsable URL)"
}

// runNode starts the node, prints the ready line and serves until ctx ends.
func runNode(ctx context.Context, cfg *fileConfig, cmd *cobra.Command) error {
	log, err := newLogger(cmd.ErrOrStderr(), cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	secret, err := readSecret(cfg.SecretFile)
	if err != nil {
		return err
	}
	bis := builtinCollector{}
	opts := zlink.NewOptions().SetLogger(log)
	for i := range cfg.Meshes {
		m := &cfg.Meshes[i]
		bi := newBuiltins()
		if err := m.apply(opts.AddRouteMesh(m.Name), bi, secret, &cfg.TLS); err != nil {
			return err
		}
		bis[m.Name] = bi
	}
	// Every configuration check the runtime does happens before anything
	// binds, so a bad configuration exits 2 without side effects.
	t := opts.Topology()
	t.HasLocationStore = cfg.Location != "" && cfg.Location != "none"
	if err := t.Validate(); err != nil {
		return err
	}
	if _, err := net.ResolveTCPAddr("tcp", cfg.Admin); err != nil {
		return usagef(fmt.Sprintf("--admin %q: %v", cfg.Admin, err))
	}
	token, err := readAdminToken(cfg.AdminTokenFile)
	if err != nil {
		return err
	}
	if err := checkAdminExposure(cfg.Admin, token); err != nil {
		return err
	}
	// The admin API serves from now on (/healthz says starting until the
	// host is published).
	api, err := admin.New(admin.Options{Token: token, Logger: log, Counters: bis.counters, Collectors: []prometheus.Collector{bis}})
	if err != nil {
		return usagef(err.Error())
	}

	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := openStore(startCtx, cfg.Location, log)
	if err != nil {
		return err
	}
	if store != nil {
		defer store.Close()
		opts.SetLocationStore(store)
	}
	ln, err := net.Listen("tcp", cfg.Admin)
	if err != nil {
		return fmt.Errorf("admin %s: %w", cfg.Admin, err)
	}
	srv := admin.NewServer(api)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("admin server failed")
		}
	}()
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = srv.Shutdown(sctx)
		<-served
	}()

	host, err := zlink.Start(startCtx, opts)
	if err != nil {
		return err
	}
	if err := waitSpots(startCtx, host); err != nil {
		sctx, c := context.WithTimeout(context.Background(), stopTimeout)
		defer c()
		_ = host.Stop(sctx)
		return err
	}
	for _, n := range host.Meshes() {
		if bi := bis[n.Mesh()]; bi != nil {
			bi.setRID(n.RID())
		}
	}
	api.SetHost(host)
	fmt.Fprintln(cmd.OutOrStdout(), readyLine(host, ln.Addr().String()))
	log.Info().Str("admin", ln.Addr().String()).Msg("node ready")

	<-ctx.Done()
	api.MarkStopping()
	return shutdown(host, log)
}

// waitSpots waits until the Spot runtime of every Object Server mesh can
// host (its ownership lease is valid and placement sees a ready Object
// Server), so the ready line also means ready for Spots. Object Clients
// do not wait: they may start before any Object Server.
func waitSpots(ctx context.Context, h *zlink.Host) error {
	for _, n := range h.Meshes() {
		if n.ObjectRole() != routemesh.ObjectServer {
			continue
		}
		if err := spot.WaitReady(ctx, n); err != nil {
			return fmt.Errorf("mesh %s: %w", n.Mesh(), err)
		}
	}
	return nil
}

// readyLine is the one line printed when the node is ready. With several
// meshes the values are comma-separated in configuration order.
func readyLine(h *zlink.Host, admin string) string {
	var names, rids, eps []string
	for _, n := range h.Meshes() {
		names = append(names, lineValue(n.Mesh()))
		rids = append(rids, lineValue(n.RID()))
		eps = append(eps, lineValue(n.Endpoint()))
	}
	return fmt.Sprintf("ready mesh=%s rid=%s endpoint=%s admin=%s",
		strings.Join(names, ","), strings.Join(rids, ","), strings.Join(eps, ","), admin)
}

// shutdown drains every mesh, then stops the host (SIGINT/SIGTERM).
func shutdown(h *zlink.Host, log zerolog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	for _, n := range h.Meshes() {
		if err := n.Drain(ctx); err != nil {
			log.Warn().Str("mesh", n.Mesh()).Err(err).Msg("drain before shutdown did not finish")
		}
	}
	if err := h.Stop(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info().Msg("node stopped")
	return nil
}
