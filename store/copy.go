package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// copySpec is how a copy moves one table.
type copySpec struct {
	table string
	// key is the primary key: rows are read in its order, a page at a time,
	// and a row whose key the destination holds is skipped.
	key  []string
	page int // rows per transaction
	// children are tables whose rows belong to one of this table's rows
	// (run_id = id): they are copied in its page's transaction, and only
	// with a row the copy added.
	children []string
	// needsRun: each row names a run (run_id) the destination must hold.
	needsRun bool
	// serial: the key is an id PostgreSQL draws from a sequence, which the
	// copy moves past the ids it wrote. A row held under the same id must
	// match the source's in the columns same names, or the copy stops: two
	// databases' histories are never merged into one under the same ids.
	serial bool
	same   []string
}

// copySpecs lists every table a copy moves, in the order it moves them:
// keys before the runs that name them, runs before their flags. A table
// of the schema must be here or in derivedTables (a test checks both
// schemas).
func copySpecs() []copySpec {
	return []copySpec{
		{table: "api_keys", key: []string{"id"}, page: 500},
		{table: "signing_keys", key: []string{"fingerprint"}, page: 500},
		{table: "sources", key: []string{"sha256"}, page: 8}, // up to MaxSourceBytes each
		{table: "runs", key: []string{"id"}, page: 100, children: []string{"decode_cells", "prefill_cells", "run_fits"}},
		{table: "run_flags", key: []string{"id"}, page: 500, needsRun: true, serial: true, same: []string{"run_id", "key_name", "created_at"}},
		{table: "run_events", key: []string{"id"}, page: 500, serial: true, same: []string{"run_id", "at", "action"}},
		{table: "idempotency_keys", key: []string{"key_name", "idempotency_key"}, page: 500},
		{table: "secrets", key: []string{"name"}, page: 100},
	}
}

// derivedTables are the tables a copy leaves to the destination, which
// keeps them itself: the data version and model names (triggers on runs)
// and PostgreSQL's migration versions.
func derivedTables() []string {
	return []string{"data_version", "model_names", "schema_migrations"}
}

// CopyTable is what a copy did to one table.
type CopyTable struct {
	Name string
	// Copied rows were added to the destination. Skipped rows were there
	// already, or belong to a run the destination holds under another id
	// (the same content stored there before).
	Copied, Skipped int
	// Source is the table's row count in the source after the copy; Before
	// and After are the destination's before and after it.
	Source, Before, After int
}

// Complete reports whether every source row is accounted for: copied or
// skipped, the destination grown by what was copied, and, when the
// destination held none of the table before, as many rows as the source.
func (t CopyTable) Complete() bool {
	if t.Copied+t.Skipped != t.Source || t.After != t.Before+t.Copied {
		return false
	}
	return t.Before > 0 || t.After == t.Source
}

// String says what the copy did to the table and, when the counts do not
// add up, what they are.
func (t CopyTable) String() string {
	s := fmt.Sprintf("%s %d (%d skipped)", t.Name, t.Copied, t.Skipped)
	if !t.Complete() {
		s += fmt.Sprintf(": the source holds %d, the destination %d (it held %d before)", t.Source, t.After, t.Before)
	}
	return s
}

// CopyResult is what a copy did, table by table, in the order copied.
type CopyResult struct {
	Tables []CopyTable
}

// Incomplete lists the tables whose counts do not add up (CopyTable.Complete).
func (r CopyResult) Incomplete() []CopyTable {
	var out []CopyTable
	for _, t := range r.Tables {
		if !t.Complete() {
			out = append(out, t)
		}
	}
	return out
}

// CopyTo copies everything s stores into dst (SQLite to PostgreSQL or
// back): every table of copySpecs, row by row, keeping ids, times,
// references and bytes, so that runs keep their URLs, history, flags and
// signatures, and keys keep working. Rows dst holds already are skipped,
// so a copy can be repeated or resumed. Tables are read a page at a time,
// each page written in one transaction of dst with the rows that belong
// to it. The result counts each table on both sides afterwards; check
// Incomplete.
func (s *Store) CopyTo(ctx context.Context, dst *Store) (CopyResult, error) {
	var res CopyResult
	if err := s.checkCopyCovers(ctx); err != nil {
		return res, err
	}
	specs := copySpecs()
	idx := map[string]int{}
	for _, sp := range specs {
		for _, name := range append([]string{sp.table}, sp.children...) {
			n, err := dst.countRows(ctx, name)
			if err != nil {
				return res, err
			}
			idx[name] = len(res.Tables)
			res.Tables = append(res.Tables, CopyTable{Name: name, Before: n})
		}
	}
	for _, sp := range specs {
		if err := s.copyTable(ctx, dst, sp, func(table string, copied, skipped int) {
			res.Tables[idx[table]].Copied += copied
			res.Tables[idx[table]].Skipped += skipped
		}); err != nil {
			return res, fmt.Errorf("copy %s: %w", sp.table, err)
		}
	}
	for i := range res.Tables {
		var err error
		if res.Tables[i].Source, err = s.countRows(ctx, res.Tables[i].Name); err != nil {
			return res, err
		}
		if res.Tables[i].After, err = dst.countRows(ctx, res.Tables[i].Name); err != nil {
			return res, err
		}
	}
	return res, nil
}

// checkCopyCovers refuses to copy a database with a table copySpecs and
// derivedTables do not name: it would be left behind.
func (s *Store) checkCopyCovers(ctx context.Context) error {
	tables, err := s.tables(ctx)
	if err != nil {
		return err
	}
	known := derivedTables()
	for _, sp := range copySpecs() {
		known = append(known, sp.table)
		known = append(known, sp.children...)
	}
	for _, t := range tables {
		if !slices.Contains(known, t) {
			return fmt.Errorf("copy: table %s is not one copy knows how to move; this build cannot copy this database", t)
		}
	}
	return nil
}

// tables lists the tables of the store's schema, by name.
func (s *Store) tables(ctx context.Context) ([]string, error) {
	q := "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
	if s.dialect == postgresSQL {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name"
	}
	rows, err := s.reader.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// countRows counts a table's rows; table is one of copySpecs'.
func (s *Store) countRows(ctx context.Context, table string) (int, error) {
	var n int
	if err := s.reader.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", table, err)
	}
	return n, nil
}

// rowSet is rows read with SELECT *: their column names and values.
type rowSet struct {
	cols []string
	rows [][]any
}

func (r rowSet) col(name string) int { return slices.Index(r.cols, name) }

// readRows reads q's rows whole; callers bound them with LIMIT or a range.
func (s *Store) readRows(ctx context.Context, q string, args ...any) (rowSet, error) {
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return rowSet{}, err
	}
	defer rows.Close()
	var out rowSet
	if out.cols, err = rows.Columns(); err != nil {
		return rowSet{}, err
	}
	for rows.Next() {
		vals := make([]any, len(out.cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return rowSet{}, err
		}
		out.rows = append(out.rows, vals)
	}
	return out, rows.Err()
}

// copyTable copies one table (and its children) page by page; tally is
// told what each page added and skipped, per table.
func (s *Store) copyTable(ctx context.Context, dst *Store, sp copySpec, tally func(table string, copied, skipped int)) error {
	keys := strings.Join(sp.key, ", ")
	var after []any
	for {
		q := "SELECT * FROM " + sp.table
		if after != nil {
			q += " WHERE (" + keys + ") > (" + placeholders(len(after)) + ")"
		}
		q += " ORDER BY " + keys + " LIMIT " + strconv.Itoa(sp.page)
		page, err := s.readRows(ctx, q, after...)
		if err != nil {
			return err
		}
		if len(page.rows) == 0 {
			return nil
		}
		children := make([]rowSet, len(sp.children))
		if len(sp.children) > 0 {
			// Pages run in key order, so a page's children are those whose
			// run_id lies between its first and last id.
			id := page.col("id")
			first, last := page.rows[0][id], page.rows[len(page.rows)-1][id]
			for i, c := range sp.children {
				if children[i], err = s.readRows(ctx, "SELECT * FROM "+c+" WHERE run_id >= ? AND run_id <= ?", first, last); err != nil {
					return fmt.Errorf("read %s: %w", c, err)
				}
			}
		}
		if err := dst.inTx(ctx, func(tx *tx) error {
			return writePage(ctx, tx, sp, page, children, tally)
		}); err != nil {
			return err
		}
		last := page.rows[len(page.rows)-1]
		after = after[:0]
		for _, k := range sp.key {
			after = append(after, last[page.col(k)])
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// writePage writes one page of sp's table and the rows of its children
// that belong to the rows it added, in tx. Counts reach tally only when
// the whole page is written: inTx may run it again.
func writePage(ctx context.Context, tx *tx, sp copySpec, page rowSet, children []rowSet, tally func(string, int, int)) error {
	added := map[any]bool{}
	copied, skipped := 0, 0
	insert, err := prepareInsert(ctx, tx, sp.table, page.cols)
	if err != nil {
		return err
	}
	defer insert.Close()
	for _, row := range page.rows {
		if sp.needsRun {
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM runs WHERE id = ?", row[page.col("run_id")]).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				skipped++
				continue
			}
		}
		r, err := insert.ExecContext(ctx, row...)
		if err != nil {
			return fmt.Errorf("%s: %w", describeKey(sp, page, row), err)
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			copied++
			if len(sp.children) > 0 {
				added[row[page.col("id")]] = true
			}
			continue
		}
		skipped++
		if len(sp.same) > 0 {
			if err := checkSame(ctx, tx, sp, page, row); err != nil {
				return err
			}
		}
	}
	counts := [][2]int{{copied, skipped}}
	for i, c := range sp.children {
		cc, cs, err := writeChildren(ctx, tx, c, children[i], added)
		if err != nil {
			return err
		}
		counts = append(counts, [2]int{cc, cs})
	}
	if sp.serial && tx.d == postgresSQL {
		// Rows written with their ids leave the sequence behind: the next
		// flag or event would draw an id taken already.
		if _, err := tx.ExecContext(ctx, "SELECT setval(pg_get_serial_sequence(?, 'id'), coalesce((SELECT max(id) FROM "+sp.table+"), 0) + 1, false)", sp.table); err != nil {
			return fmt.Errorf("advance the id sequence: %w", err)
		}
	}
	tally(sp.table, counts[0][0], counts[0][1])
	for i, c := range sp.children {
		tally(c, counts[i+1][0], counts[i+1][1])
	}
	return nil
}

// writeChildren writes the rows of set whose run the page added; the
// others belong to runs the destination held already.
func writeChildren(ctx context.Context, tx *tx, table string, set rowSet, added map[any]bool) (copied, skipped int, err error) {
	if len(set.rows) == 0 {
		return 0, 0, nil
	}
	insert, err := prepareInsert(ctx, tx, table, set.cols)
	if err != nil {
		return 0, 0, err
	}
	defer insert.Close()
	run := set.col("run_id")
	for _, row := range set.rows {
		if !added[row[run]] {
			skipped++
			continue
		}
		r, err := insert.ExecContext(ctx, row...)
		if err != nil {
			return 0, 0, fmt.Errorf("%s of run %v: %w", table, row[run], err)
		}
		if n, _ := r.RowsAffected(); n == 1 {
			copied++
		} else {
			skipped++
		}
	}
	return copied, skipped, nil
}

// prepareInsert prepares an insert of cols into table that skips a row
// whose key is held already.
func prepareInsert(ctx context.Context, tx *tx, table string, cols []string) (*sql.Stmt, error) {
	prefix, suffix := tx.d.insertIgnore(table)
	st, err := tx.PrepareContext(ctx, prefix+" ("+strings.Join(cols, ", ")+") VALUES ("+placeholders(len(cols))+")"+suffix)
	if err != nil {
		return nil, fmt.Errorf("copy into %s: %w", table, err)
	}
	return st, nil
}

// checkSame stops the copy when the destination holds another row under
// a serial id the source's row has.
func checkSame(ctx context.Context, tx *tx, sp copySpec, page rowSet, row []any) error {
	q := "SELECT count(*) FROM " + sp.table + " WHERE id = ?"
	args := []any{row[page.col("id")]}
	for _, c := range sp.same {
		q += " AND " + c + " = ?"
		args = append(args, row[page.col(c)])
	}
	var n int
	if err := tx.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: the destination holds another row under this id (its own history): copy into a database without one", describeKey(sp, page, row))
	}
	return nil
}

// describeKey names a row by its table and key, for errors.
func describeKey(sp copySpec, page rowSet, row []any) string {
	parts := make([]string, len(sp.key))
	for i, k := range sp.key {
		parts[i] = fmt.Sprintf("%s %v", k, row[page.col(k)])
	}
	return sp.table + " " + strings.Join(parts, ", ")
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
