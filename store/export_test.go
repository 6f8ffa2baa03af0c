package store

// CopiedTables lists the tables CopyTo copies, and DerivedTables those it
// leaves to the destination, for the test that holds them to the schema.
func CopiedTables() []string {
	var out []string
	for _, sp := range copySpecs() {
		out = append(out, sp.table)
		out = append(out, sp.children...)
	}
	return out
}

// DerivedTables is derivedTables, for tests.
func DerivedTables() []string { return derivedTables() }
