//go:build simmargin0

package sim

// marginZeroBuild: built with -tags simmargin0, every world runs with
// margin 0 and the seed tests must fail (the self-check, as a build).
const marginZeroBuild = true
