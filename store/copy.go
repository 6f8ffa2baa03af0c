package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	// serial: the key is an id the database draws (a sequence on
	// PostgreSQL, which the copy moves past the ids it wrote). A row is
	// held already when the destination has one equal in the columns same
	// names, under any id; a row whose id the destination gave to another
	// row of its own is added under a new id, so two histories merge.
	serial bool
	same   []string
	// held are the columns a row held under the same key must have as the
	// source's, or the copy stops: a signing key registered to another API
	// key in the destination would make the source's signed runs its.
	held []string
}

// copySpecs lists every table a copy moves, in the order it moves them:
// keys before the runs that name them, runs before their flags. A table
// of the schema must be here or in derivedTables: a test holds both
// lists to each backend's migrations.
func copySpecs() []copySpec {
	return []copySpec{
		{table: "api_keys", key: []string{"id"}, page: 500, held: []string{"name", "secret_hash"}},
		{table: "signing_keys", key: []string{"fingerprint"}, page: 500, held: []string{"key_name", "public_key"}},
		{table: "sources", key: []string{"sha256"}, page: 8}, // up to MaxSourceBytes each
		{table: "runs", key: []string{"id"}, page: 100, children: []string{"decode_cells", "prefill_cells", "run_fits"}},
		{table: "run_flags", key: []string{"id"}, page: 500, needsRun: true, serial: true, same: []string{"run_id", "key_name", "created_at"}},
		{table: "run_events", key: []string{"id"}, page: 500, serial: true, same: []string{"run_id", "at", "key_name", "action", "detail"}},
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
	// Copied rows were added to the destination; Renumbered of them under
	// a new id, as theirs was another row's there (flags and events of a
	// destination with a history of its own). Skipped rows were there
	// already, or belong to a run the destination holds under another id
	// (the same content stored there before).
	Copied, Renumbered, Skipped int
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
	if t.Renumbered > 0 {
		s = fmt.Sprintf("%s %d (%d skipped, %d under new ids)", t.Name, t.Copied, t.Skipped, t.Renumbered)
	}
	if !t.Complete() {
		s += fmt.Sprintf(" does not add up: the source has %d and the destination %d (%d before)", t.Source, t.After, t.Before)
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
	c := &copier{src: s, dst: dst, idx: map[string]int{}, flagIDs: map[int64]int64{}}
	specs := copySpecs()
	for _, sp := range specs {
		for _, name := range append([]string{sp.table}, sp.children...) {
			n, err := dst.countRows(ctx, name)
			if err != nil {
				return c.res, err
			}
			c.idx[name] = len(c.res.Tables)
			c.res.Tables = append(c.res.Tables, CopyTable{Name: name, Before: n})
		}
	}
	for _, sp := range specs {
		if err := c.copyTable(ctx, sp); err != nil {
			return c.res, fmt.Errorf("copy %s: %w", sp.table, err)
		}
	}
	for i := range c.res.Tables {
		t := &c.res.Tables[i]
		var err error
		if t.Source, err = s.countRows(ctx, t.Name); err != nil {
			return c.res, err
		}
		if t.After, err = dst.countRows(ctx, t.Name); err != nil {
			return c.res, err
		}
	}
	return c.res, nil
}

// copier is one copy under way.
type copier struct {
	src, dst *Store
	res      CopyResult
	idx      map[string]int // res.Tables' index by name
	// flagIDs maps a source flag's id to its id in the destination where
	// the two differ, for the events that name the flag.
	flagIDs map[int64]int64
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

// copyTable copies one table (and its children) page by page.
func (c *copier) copyTable(ctx context.Context, sp copySpec) error {
	keys := strings.Join(sp.key, ", ")
	var after []any
	for {
		q := "SELECT * FROM " + sp.table
		if after != nil {
			q += " WHERE (" + keys + ") > (" + placeholders(len(after)) + ")"
		}
		q += " ORDER BY " + keys + " LIMIT " + strconv.Itoa(sp.page)
		page, err := c.src.readRows(ctx, q, after...)
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
			for i, ch := range sp.children {
				if children[i], err = c.src.readRows(ctx, "SELECT * FROM "+ch+" WHERE run_id >= ? AND run_id <= ?", first, last); err != nil {
					return fmt.Errorf("read %s: %w", ch, err)
				}
			}
		}
		var w pageWrite
		if err := c.dst.inTx(ctx, func(tx *tx) error {
			w = pageWrite{counts: map[string]*CopyTable{}, flagIDs: map[int64]int64{}}
			return c.writePage(ctx, tx, sp, page, children, &w)
		}); err != nil {
			return err
		}
		// Counted once the page is committed: inTx may run it again.
		for name, n := range w.counts {
			t := &c.res.Tables[c.idx[name]]
			t.Copied += n.Copied
			t.Renumbered += n.Renumbered
			t.Skipped += n.Skipped
		}
		maps.Copy(c.flagIDs, w.flagIDs)
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

// pageWrite is what writing one page did: counts by table, and the flags
// it gave (or found under) other ids.
type pageWrite struct {
	counts  map[string]*CopyTable
	flagIDs map[int64]int64
}

func (w *pageWrite) count(table string) *CopyTable {
	if w.counts[table] == nil {
		w.counts[table] = &CopyTable{}
	}
	return w.counts[table]
}

// writePage writes one page of sp's table and the rows of its children
// that belong to the rows it added, in tx.
func (c *copier) writePage(ctx context.Context, tx *tx, sp copySpec, page rowSet, children []rowSet, w *pageWrite) error {
	added := map[any]bool{}
	n := w.count(sp.table)
	insert, err := prepareInsert(ctx, tx, sp.table, page.cols)
	if err != nil {
		return err
	}
	defer insert.Close()
	for _, row := range page.rows {
		if sp.needsRun {
			var held int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM runs WHERE id = ?", row[page.col("run_id")]).Scan(&held); err != nil {
				return err
			}
			if held == 0 {
				n.Skipped++
				continue
			}
		}
		if sp.serial {
			if err := c.writeSerial(ctx, tx, sp, page, row, insert, w); err != nil {
				return err
			}
			continue
		}
		r, err := insert.ExecContext(ctx, row...)
		if err != nil {
			return fmt.Errorf("%s: %w", describeKey(sp, page, row), err)
		}
		if k, err := r.RowsAffected(); err != nil {
			return err
		} else if k == 0 {
			if err := checkHeld(ctx, tx, sp, page, row); err != nil {
				return err
			}
			n.Skipped++
			continue
		}
		n.Copied++
		if len(sp.children) > 0 {
			added[row[page.col("id")]] = true
		}
	}
	for i, ch := range sp.children {
		if err := writeChildren(ctx, tx, ch, children[i], added, w.count(ch)); err != nil {
			return err
		}
	}
	if sp.serial {
		return advanceSequence(ctx, tx, sp.table)
	}
	return nil
}

// writeSerial writes a flag or an event: under its id when the
// destination has none of that id, skipped when it holds the same row
// (under any id), else under a new id. An event that names a flag given
// another id names that id instead.
func (c *copier) writeSerial(ctx context.Context, tx *tx, sp copySpec, page rowSet, row []any, insert *sql.Stmt, w *pageWrite) error {
	n := w.count(sp.table)
	idCol := page.col("id")
	srcID, ok := row[idCol].(int64)
	if !ok {
		return fmt.Errorf("%s: the id is a %T, not an integer", describeKey(sp, page, row), row[idCol])
	}
	if sp.table == "run_events" {
		var err error
		if row, err = c.renameFlag(page, row); err != nil {
			return fmt.Errorf("%s: %w", describeKey(sp, page, row), err)
		}
	}
	r, err := insert.ExecContext(ctx, row...)
	if err != nil {
		return fmt.Errorf("%s: %w", describeKey(sp, page, row), err)
	}
	if k, err := r.RowsAffected(); err != nil {
		return err
	} else if k == 1 {
		n.Copied++
		return nil
	}
	q := "SELECT id FROM " + sp.table + " WHERE "
	var args []any
	for i, col := range sp.same {
		if i > 0 {
			q += " AND "
		}
		q += tx.d.sameAs(col)
		args = append(args, row[page.col(col)])
	}
	var held int64
	err = tx.QueryRowContext(ctx, q+" ORDER BY id LIMIT 1", args...).Scan(&held)
	if err == nil {
		n.Skipped++
		if sp.table == "run_flags" && held != srcID {
			w.flagIDs[srcID] = held
		}
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if sp.table == "run_flags" && row[page.col("resolved_at")] == nil {
		var open int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM run_flags WHERE run_id = ? AND key_name = ? AND resolved_at IS NULL",
			row[page.col("run_id")], row[page.col("key_name")]).Scan(&open); err != nil {
			return err
		}
		if open > 0 {
			return fmt.Errorf("%s: key %v has another open flag on run %v in the destination; one open flag per key and run: resolve one of them, then copy again",
				describeKey(sp, page, row), row[page.col("key_name")], row[page.col("run_id")])
		}
	}
	// The id is another row's: the destination has a history of its own.
	if err := advanceSequence(ctx, tx, sp.table); err != nil {
		return err
	}
	cols := slices.Delete(slices.Clone(page.cols), idCol, idCol+1)
	vals := slices.Delete(slices.Clone(row), idCol, idCol+1)
	var id int64
	if err := tx.QueryRowContext(ctx, "INSERT INTO "+sp.table+" ("+strings.Join(cols, ", ")+") VALUES ("+placeholders(len(cols))+") RETURNING id", vals...).Scan(&id); err != nil {
		return fmt.Errorf("%s under a new id: %w", describeKey(sp, page, row), err)
	}
	n.Copied++
	n.Renumbered++
	if sp.table == "run_flags" {
		w.flagIDs[srcID] = id
	}
	return nil
}

// renameFlag returns an event row whose detail names, as flag_id, a flag
// the copy gave another id, with that id; other rows as they are.
func (c *copier) renameFlag(page rowSet, row []any) ([]any, error) {
	if len(c.flagIDs) == 0 {
		return row, nil
	}
	if a := row[page.col("action")]; a != ActionFlag && a != ActionResolve {
		return row, nil
	}
	var text string
	switch d := row[page.col("detail")].(type) {
	case string:
		text = d
	case []byte:
		text = string(d)
	default:
		return row, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var detail map[string]any
	if err := dec.Decode(&detail); err != nil {
		return nil, fmt.Errorf("detail: %w", err)
	}
	num, ok := detail["flag_id"].(json.Number)
	if !ok {
		return row, nil
	}
	old, err := num.Int64()
	if err != nil {
		return row, nil
	}
	id, ok := c.flagIDs[old]
	if !ok {
		return row, nil
	}
	detail["flag_id"] = id
	b, err := json.Marshal(detail)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(row)
	out[page.col("detail")] = string(b)
	return out, nil
}

// advanceSequence moves table's id sequence past its ids on PostgreSQL:
// rows written with their ids leave it behind, and the next flag or
// event would draw an id taken already. It never moves back (nextval),
// so an id another instance drew meanwhile is not drawn again. SQLite
// takes the largest id + 1.
func advanceSequence(ctx context.Context, tx *tx, table string) error {
	if tx.d != postgresSQL {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT setval(seq, greatest(nextval(seq), top + 1), false)
		FROM (SELECT pg_get_serial_sequence(?, 'id') AS seq, (SELECT coalesce(max(id), 0) FROM `+table+`) AS top) AS s`, table); err != nil {
		return fmt.Errorf("advance the id sequence of %s: %w", table, err)
	}
	return nil
}

// writeChildren writes the rows of set whose run the page added; the
// others belong to runs the destination held already.
func writeChildren(ctx context.Context, tx *tx, table string, set rowSet, added map[any]bool, n *CopyTable) error {
	if len(set.rows) == 0 {
		return nil
	}
	insert, err := prepareInsert(ctx, tx, table, set.cols)
	if err != nil {
		return err
	}
	defer insert.Close()
	run := set.col("run_id")
	for _, row := range set.rows {
		if !added[row[run]] {
			n.Skipped++
			continue
		}
		r, err := insert.ExecContext(ctx, row...)
		if err != nil {
			return fmt.Errorf("%s of run %v: %w", table, row[run], err)
		}
		if k, _ := r.RowsAffected(); k == 1 {
			n.Copied++
		} else {
			n.Skipped++
		}
	}
	return nil
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

// checkHeld stops the copy when the row the destination holds under a
// source row's key differs from it in sp.held.
func checkHeld(ctx context.Context, tx *tx, sp copySpec, page rowSet, row []any) error {
	if len(sp.held) == 0 {
		return nil
	}
	var (
		where []string
		args  []any
	)
	for _, col := range append(slices.Clone(sp.key), sp.held...) {
		where = append(where, tx.d.sameAs(col))
		args = append(args, row[page.col(col)])
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+sp.table+" WHERE "+strings.Join(where, " AND "), args...).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: the destination holds another row in its place (another %s under this key, or one of them under another key); remove one of the two, then copy again",
			describeKey(sp, page, row), strings.Join(sp.held, " or "))
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
