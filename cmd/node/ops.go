package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/admin"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
)

// adminTimeout bounds one status, tree, weight or undrain command.
const adminTimeout = 5 * time.Second

// adminClient talks to a node's admin API.
type adminClient struct {
	base  string
	hc    *http.Client
	token []byte // sent as a bearer token when set
}

// adminTarget is what the admin subcommands take: the address and the
// token file.
type adminTarget struct {
	addr, tokenFile string
}

func newAdminClient(t adminTarget, timeout time.Duration) (*adminClient, error) {
	addr := t.addr
	if addr == "" {
		return nil, usagef("--admin ADDR is required")
	}
	token, err := readAdminToken(t.tokenFile)
	if err != nil {
		return nil, err
	}
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if _, err := url.Parse(base); err != nil {
		return nil, usagef(fmt.Sprintf("--admin %q: %v", addr, err))
	}
	return &adminClient{base: strings.TrimRight(base, "/"), hc: &http.Client{Timeout: timeout}, token: token}, nil
}

// do sends a request and returns the status and body.
func (c *adminClient) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil || method != http.MethodGet {
		// Every request that changes the node is JSON, body or not: the
		// admin API refuses any other (a web page could forge it).
		req.Header.Set("Content-Type", "application/json")
	}
	if len(c.token) > 0 {
		req.Header.Set("Authorization", "Bearer "+string(c.token))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("admin %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, raw, err
}

// fail turns an admin error body into an error (exit 2 when the node
// refused it as a configuration error).
func fail(code int, raw []byte) error {
	var e admin.ErrorResponse
	if json.Unmarshal(raw, &e) != nil || e.Error == "" {
		return fmt.Errorf("admin answered %d: %s", code, strings.TrimSpace(string(raw)))
	}
	if e.Config {
		return usagef(e.Error)
	}
	return fmt.Errorf("%s", e.Error)
}

func addAdminFlag(c *cobra.Command, t *adminTarget) {
	c.Flags().StringVar(&t.addr, "admin", "", "admin address of the node (HOST:PORT)")
	c.Flags().StringVar(&t.tokenFile, "admin-token-file", "", "the node's admin token file (the endpoints that change the node — weight, drain, undrain, relocate, spots/move — need it when the node has one)")
}

func newStatusCmd() *cobra.Command {
	var target adminTarget
	var mesh string
	var asJSON bool
	c := &cobra.Command{
		Use:   "status --admin ADDR [--json]",
		Short: "Show a node's state, RID, generation, peers, channels and counters",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ac, err := newAdminClient(target, adminTimeout+time.Second)
			if err != nil {
				return err
			}
			path := "/status"
			if mesh != "" {
				path += "?mesh=" + url.QueryEscape(mesh)
			}
			code, raw, err := ac.do(cmd.Context(), http.MethodGet, path, nil)
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fail(code, raw)
			}
			if asJSON {
				_, err = cmd.OutOrStdout().Write(raw)
				return err
			}
			var st statusView
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("status: %w", err)
			}
			printStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	addAdminFlag(c, &target)
	c.Flags().StringVar(&mesh, "mesh", "", "MeshName (default: the node's first mesh)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the JSON of GET /status")
	return c
}

// statusView decodes GET /status (routemesh.Status encodes its states as
// names and does not decode them).
type statusView struct {
	Mesh       string `json:"mesh"`
	RID        string `json:"rid"`
	Generation uint64 `json:"generation"`
	Revision   uint64 `json:"revision"`
	State      string `json:"state"`
	Endpoint   string `json:"endpoint"`
	ObjectRole string `json:"object_role"`
	Peers      []struct {
		RID       string `json:"rid"`
		State     string `json:"state"`
		Endpoint  string `json:"endpoint"`
		LastError string `json:"last_error"`
		Identity  string `json:"identity"`
	} `json:"peers"`
	Security routemesh.SecurityStatus `json:"security"`
	Channels []struct {
		Name   string `json:"name"`
		Role   string `json:"role"`
		Weight int    `json:"weight"`
	} `json:"channels"`
	Counters map[string]uint64 `json:"counters"`
	Inflight int64             `json:"inflight"`
	Store    *admin.StoreStats `json:"store"`
}

// printStatus writes the text form of a status, one fact per line.
func printStatus(w io.Writer, st statusView) {
	fmt.Fprintf(w, "mesh=%s rid=%s generation=%d state=%s endpoint=%s object=%s revision=%d inflight=%d\n",
		st.Mesh, st.RID, st.Generation, st.State, st.Endpoint, st.ObjectRole, st.Revision, st.Inflight)
	if sec := st.Security; sec.Profile != "" {
		fmt.Fprintf(w, "security profile=%s identity=%s", sec.Profile, sec.Identity)
		if sec.Certificate != "" {
			fmt.Fprintf(w, " certificate=%s", sec.Certificate)
		}
		if sec.SharedSecret {
			fmt.Fprint(w, " shared_secret=true")
		}
		fmt.Fprintln(w)
	}
	for _, p := range st.Peers {
		fmt.Fprintf(w, "peer rid=%s state=%s endpoint=%s", p.RID, p.State, p.Endpoint)
		if p.Identity != "" {
			fmt.Fprintf(w, " identity=%s", p.Identity)
		}
		if p.LastError != "" {
			fmt.Fprintf(w, " last_error=%q", p.LastError)
		}
		fmt.Fprintln(w)
	}
	for _, ch := range st.Channels {
		fmt.Fprintf(w, "channel name=%s role=%s weight=%d\n", ch.Name, ch.Role, ch.Weight)
	}
	keys := make([]string, 0, len(st.Counters))
	for k := range st.Counters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatUint(st.Counters[k], 10)
	}
	fmt.Fprintf(w, "counters %s\n", strings.Join(parts, " "))
	if s := st.Store; s != nil {
		fmt.Fprintf(w, "store kind=%s corrupt_records=%d errors=%d replica_waits=%d unconfirmed_writes=%d\n",
			s.Kind, s.CorruptRecords, s.Errors, s.ReplicaWaits, s.UnconfirmedWrites)
	}
}

func newTreeCmd() *cobra.Command {
	var target adminTarget
	var asJSON bool
	c := &cobra.Command{
		Use:   "tree --admin ADDR [--json]",
		Short: "Show the live supervision tree",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ac, err := newAdminClient(target, adminTimeout+time.Second)
			if err != nil {
				return err
			}
			code, raw, err := ac.do(cmd.Context(), http.MethodGet, "/tree", nil)
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fail(code, raw)
			}
			if asJSON {
				_, err = cmd.OutOrStdout().Write(raw)
				return err
			}
			var n supervisor.Node
			if err := json.Unmarshal(raw, &n); err != nil {
				return fmt.Errorf("tree: %w", err)
			}
			return formatTree(cmd.OutOrStdout(), n)
		},
	}
	addAdminFlag(c, &target)
	c.Flags().BoolVar(&asJSON, "json", false, "print the JSON of GET /tree")
	return c
}

func newWeightCmd() *cobra.Command {
	var target adminTarget
	var mesh string
	c := &cobra.Command{
		Use:   "weight --admin ADDR CHANNEL WEIGHT",
		Short: "Change a Server weight at runtime (0..10000)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := strconv.Atoi(args[1])
			if err != nil {
				return usagef(fmt.Sprintf("weight %q: want an integer 0..10000", args[1]))
			}
			ac, err := newAdminClient(target, adminTimeout+time.Second)
			if err != nil {
				return err
			}
			code, raw, err := ac.do(cmd.Context(), http.MethodPost, "/weight", admin.WeightRequest{Mesh: mesh, Channel: args[0], Weight: &w})
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fail(code, raw)
			}
			var resp admin.WeightResponse
			if err := json.Unmarshal(raw, &resp); err != nil {
				return fmt.Errorf("weight: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok mesh=%s channel=%s weight=%d\n", resp.Mesh, resp.Channel, resp.Weight)
			return nil
		},
	}
	addAdminFlag(c, &target)
	c.Flags().StringVar(&mesh, "mesh", "", "MeshName (default: the node's first mesh)")
	return c
}

func newDrainCmd() *cobra.Command {
	var target adminTarget
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "drain --admin ADDR [--timeout D]",
		Short: "Drain a node (its persistent Spots move to other Object Servers); returns when drained, non-zero on timeout",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 || timeout > admin.MaxDrainTimeout {
				return usagef(fmt.Sprintf("--timeout %s: want a positive duration up to %s", timeout, admin.MaxDrainTimeout))
			}
			ac, err := newAdminClient(target, timeout+5*time.Second)
			if err != nil {
				return err
			}
			code, raw, err := ac.do(cmd.Context(), http.MethodPost, "/drain?timeout="+url.QueryEscape(timeout.String()), nil)
			if err != nil {
				return err
			}
			var resp admin.DrainResponse
			if code == http.StatusOK || code == http.StatusGatewayTimeout {
				if err := json.Unmarshal(raw, &resp); err != nil {
					return fmt.Errorf("drain: %w", err)
				}
			}
			switch code {
			case http.StatusOK:
				fmt.Fprintf(cmd.OutOrStdout(), "drained mesh=%s moved_spots=%d\n", strings.Join(resp.Meshes, ","), resp.MovedSpots)
				return nil
			case http.StatusGatewayTimeout:
				return fmt.Errorf("drain timed out (moved_spots=%d): %s", resp.MovedSpots, resp.Error)
			default:
				return fail(code, raw)
			}
		},
	}
	addAdminFlag(c, &target)
	c.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for the drain")
	return c
}
