//go:build !simmargin0

package sim

// marginZeroBuild: built without the simmargin0 tag, the margin is the
// configured one.
const marginZeroBuild = false
