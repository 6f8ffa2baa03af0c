// Package data is the open dataset built into matrixd: the published
// measurement files under this folder, the META beside each, their
// licences and SOURCES.md, as a file system a fresh database is seeded
// from.
package data

import "embed"

// FS holds every file of the dataset but this one's dot-files, at the
// same paths as in the repository's data/ folder.
//
//go:embed *
var FS embed.FS
