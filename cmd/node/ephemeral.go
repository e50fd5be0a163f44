package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// ephemeral is the temporary MeshNode of a command-line tool (request,
// spot): it listens on loopback, dials manual peers, or, with a Location
// Store and no manual peer, finds the mesh by automatic topology under a
// RID prefix.
type ephemeral struct {
	mesh       string
	location   string   // "" = no Location Store
	peers      []string // ENDPOINT[#RID]; manual topology when set
	ridPrefix  string   // the RID prefix of automatic topology
	secretFile string
	tls        tlsFiles // mesh-link TLS (all three files or none)
	log        zerolog.Logger
	// configure adds the tool's roles to the builder.
	configure func(*routemesh.MeshBuilder)
	// precheck looks at the mesh's descriptors before the node starts
	// (only with a Location Store): a non-empty answer says why nobody
	// can answer, and the run ends at once as no_target.
	precheck func([]location.Descriptor) string
}

// noTargetError ends a tool's run before it sent anything: nobody can
// answer (the message says why).
type noTargetError struct{ msg string }

func (e *noTargetError) Error() string { return e.msg }

// start brings the node up. stop stops it, then closes the store.
func (e *ephemeral) start(ctx context.Context) (node *routemesh.Node, stop func(), err error) {
	// A name the store refuses is a usage error before the store is asked.
	if err := location.CheckMeshName(e.mesh, false); err != nil {
		return nil, nil, usagef("--mesh: " + strings.TrimPrefix(err.Error(), location.ErrInvalid.Error()+": "))
	}
	secret, err := readSecret(e.secretFile)
	if err != nil {
		return nil, nil, err
	}
	tc, err := e.tls.config()
	if err != nil {
		return nil, nil, err
	}
	opts := zlink.NewOptions().SetLogger(e.log)
	mb := opts.AddRouteMesh(e.mesh).Listen("tcp://127.0.0.1:0")
	if e.configure != nil {
		e.configure(mb)
	}
	if secret != nil {
		mb.SetTrust(routemesh.TrustConfig{Secret: secret})
	}
	if tc != nil {
		mb.SetTLS(*tc)
	}
	for _, p := range e.peers {
		pc, err := parsePeer(p)
		if err != nil {
			return nil, nil, err
		}
		mb.AddPeer(pc.Endpoint, pc.ExpectRID)
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var store location.Store
	if e.location != "" {
		if len(e.peers) == 0 {
			mb.SetRoutingIDPrefix(e.ridPrefix)
		}
		if store, err = openStore(startCtx, e.location, e.log); err != nil {
			return nil, nil, err
		}
		opts.SetLocationStore(store)
		if e.precheck != nil {
			descs, err := store.ListDescriptors(startCtx, e.mesh)
			if err != nil {
				store.Close()
				return nil, nil, fmt.Errorf("location store: %w", err) // never the URL: it may hold a password
			}
			why := tlsMismatch(e.mesh, tc != nil, descs)
			if why == "" {
				why = e.precheck(descs)
			}
			if why != "" {
				store.Close()
				return nil, nil, &noTargetError{msg: why}
			}
		}
	}
	host, err := zlink.Start(startCtx, opts)
	if err != nil {
		if store != nil {
			store.Close()
		}
		return nil, nil, err
	}
	stop = func() {
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		_ = host.Stop(sctx)
		if store != nil {
			store.Close()
		}
	}
	return host.Mesh(e.mesh), stop, nil
}

// tlsMismatch says why a tool cannot reach any registered node of the mesh
// because one side runs its links over TLS and the other does not ("" when
// some node matches, or none is registered): a node's security identity
// starts with "tls:" exactly when it has TLS.
func tlsMismatch(mesh string, withTLS bool, descs []location.Descriptor) string {
	var sample string
	for _, d := range descs {
		if strings.HasPrefix(d.SecurityIdentity, "tls:") == withTLS {
			return ""
		}
		sample = d.SecurityIdentity
	}
	switch {
	case sample == "":
		return ""
	case withTLS:
		return fmt.Sprintf("mesh %q does not use TLS on its links (its nodes state %s): leave out --tls-ca, --tls-cert and --tls-key", mesh, sample)
	default:
		return fmt.Sprintf("mesh %q uses TLS on its links (its nodes state %s): give this tool the mesh's --tls-ca, --tls-cert and --tls-key", mesh, sample)
	}
}
