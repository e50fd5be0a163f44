package location

import "strings"

// MaxNameLen is the longest MeshName, RID, ChannelName or Spot kind the
// store accepts, in bytes.
const MaxNameLen = maxNameLen

// MaxServers is the most Server channels one descriptor may list.
const MaxServers = maxServers

// CheckMeshName refuses a MeshName the store would refuse: empty, longer
// than MaxNameLen bytes, or holding '{' or '}' (they delimit the Redis
// hash tag); with Spots also one holding ':' (it separates the parts of a
// Spot's key). The error matches ErrInvalid.
func CheckMeshName(mesh string, spots bool) error {
	switch {
	case mesh == "" || len(mesh) > maxNameLen:
		return invalidf("mesh name %.64q: want 1..%d bytes (it has %d)", mesh, maxNameLen, len(mesh))
	case strings.ContainsAny(mesh, "{}"):
		return invalidf("mesh name %.64q: it must not contain '{' or '}'", mesh)
	case spots && strings.Contains(mesh, ":"):
		return invalidf("mesh name %.64q: a mesh with Spots must not contain ':'", mesh)
	}
	return nil
}

// CheckName refuses a RID or ChannelName the store would refuse: empty or
// longer than MaxNameLen bytes. what names it in the error (which matches
// ErrInvalid).
func CheckName(what, name string) error {
	if name == "" || len(name) > maxNameLen {
		return invalidf("%s %.64q: want 1..%d bytes (it has %d)", what, name, maxNameLen, len(name))
	}
	return nil
}
