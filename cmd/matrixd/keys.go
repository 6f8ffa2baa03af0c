package main

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/matrixd/matrixd/store"
)

const keysUsage = `usage: matrixd keys SUBCOMMAND [flags]

API keys for submissions over HTTP. Only a hash of each key is stored.

subcommands:
  create  make a key: --name NAME [--admin]; it is printed once, on the last line
  list    name, admin, created, last used, revoked, signing-key fingerprints
  revoke  the key NAME stops working; its runs stay
  proof   the body registering an Ed25519 signing key for NAME: --name NAME --key FILE

Run "matrixd keys SUBCOMMAND --help" for its flags.`

func keysCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return &usageError{"keys", errors.New("name a subcommand: create, list, revoke or proof")}
	}
	sub, args := args[0], args[1:]
	if sub == "help" && len(args) > 0 && !isHelp(args[0]) {
		sub, args = args[0], []string{"--help"}
	} else if sub == "help" || isHelp(sub) {
		fmt.Fprintln(stdout, keysUsage)
		return nil
	}
	var c *cli
	var name *string
	var admin *bool
	var keyFile *string
	switch sub {
	case "create":
		c = newCLI("keys create", "--name NAME [--admin] [--db PATH]",
			"Make an API key. It is printed once, alone on the last line; only its hash is stored.")
		name = c.fs.String("name", "", "the key's name, recorded as submitted_by on its runs: 1–64 letters, digits, '.', '_', '-' or '@'")
		admin = c.fs.Bool("admin", false, "an admin key may edit and delete any run")
	case "list":
		c = newCLI("keys list", "[--db PATH]", "List the keys: name, admin, created, last used, revoked, and the fingerprints of the\nEd25519 signing keys each registered (POST /v1/signing-keys), \"(weak)\" after one stored\nbefore weak keys were refused, which verifies nothing. Never the secret.")
	case "revoke":
		c = newCLI("keys revoke", "[--db PATH] NAME", "Revoke a key: it stops working; the runs it submitted stay.",
			[2]string{"NAME", "the key's name, as keys list shows it"})
	case "proof":
		c = newCLI("keys proof", "--name NAME --key FILE",
			"Print the JSON body of POST /v1/signing-keys that registers the Ed25519 key in FILE for the\n"+
				"API key NAME: its public key, and the proof that you hold the private key, its signature\n"+
				"over \"matrixd signing key v1\\napi_key: NAME\\npublic_key: BASE64\\n\". Reads no database;\n"+
				"the private key is not sent anywhere.")
		name = c.fs.String("name", "", "the name of the API key that will register the signing key")
		keyFile = c.fs.String("key", "", "the private key, PEM (PKCS #8, as openssl genpkey -algorithm ed25519 writes it)")
	default:
		if strings.HasPrefix(sub, "-") {
			return &usageError{"keys", fmt.Errorf("name a subcommand before flags: create, list, revoke or proof")}
		}
		return &usageError{"keys", fmt.Errorf("unknown subcommand %q: create, list, revoke or proof", sub)}
	}
	fs := c.fs
	var db *string
	if sub != "proof" {
		db = dbFlag(fs, getenv, sub == "create")
	}
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if sub == "proof" {
		if fs.NArg() != 0 {
			return c.usageErr("unexpected arguments %q", fs.Args())
		}
		if *name == "" || *keyFile == "" {
			return c.usageErr("--name and --key are required")
		}
		return keysProof(*name, *keyFile, stdout)
	}
	wantArgs := 0
	if sub == "revoke" {
		wantArgs = 1
	}
	if sub == "revoke" && fs.NArg() == 0 {
		return c.usageErr("name the key to revoke")
	}
	if fs.NArg() != wantArgs {
		return c.usageErr("unexpected arguments %q", fs.Args()[wantArgs:])
	}
	if sub == "create" && *name == "" {
		return c.usageErr("--name is required")
	}
	// Creating a key may start a database (the service seeds it later);
	// listing and revoking need the one the service uses.
	open := openExisting
	if sub == "create" {
		open = func(ctx context.Context, db string) (*store.Store, error) {
			return store.Open(ctx, db, store.Options{})
		}
	}
	st, err := open(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	switch sub {
	case "create":
		k, token, err := st.CreateKey(ctx, *name, *admin)
		if err != nil {
			return cliError("keys create", err)
		}
		kind := "key"
		if k.Admin {
			kind = "admin key"
		}
		fmt.Fprintf(stdout, "created %s %s; it is shown only now: send it as Authorization: Bearer KEY\n%s\n", kind, k.Name, token)
	case "list":
		keys, err := st.Keys(ctx)
		if err != nil {
			return err
		}
		signing, err := st.SigningKeys(ctx, "")
		if err != nil {
			return err
		}
		fps := map[string][]string{}
		for _, sk := range signing {
			fp := sk.Fingerprint
			if store.CheckPublicKey(sk.PublicKey) != nil {
				fp += "(weak)" // stored before weak keys were refused; it verifies nothing
			}
			fps[sk.KeyName] = append(fps[sk.KeyName], fp)
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tADMIN\tCREATED\tLAST USED\tREVOKED\tSIGNING KEYS")
		for _, k := range keys {
			sks := strings.Join(fps[k.Name], ",")
			if sks == "" {
				sks = "-"
			}
			fmt.Fprintf(w, "%s\t%t\t%s\t%s\t%s\t%s\n", k.Name, k.Admin, k.CreatedAt.Format(time.RFC3339), when(k.LastUsedAt), when(k.RevokedAt), sks)
		}
		return w.Flush()
	case "revoke":
		revoked, err := st.RevokeKey(ctx, fs.Arg(0))
		if err != nil {
			return fmt.Errorf("keys revoke: %w", err)
		}
		if revoked {
			fmt.Fprintf(stdout, "revoked key %s\n", fs.Arg(0))
		} else {
			fmt.Fprintf(stdout, "key %s was revoked already\n", fs.Arg(0))
		}
	}
	return nil
}

// keysProof prints the registration body of the Ed25519 private key in
// file for the API key named name.
func keysProof(name, file string, stdout io.Writer) error {
	if !store.ValidKeyName(name) {
		return fmt.Errorf("keys proof: --name %q cannot name an API key: 1–64 letters, digits, '.', '_', '-' or '@'", name)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("keys proof: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return fmt.Errorf("keys proof: %s holds no PEM PRIVATE KEY (make one with openssl genpkey -algorithm ed25519 -out %s)", file, file)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return fmt.Errorf("keys proof: %s: %w", file, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return fmt.Errorf("keys proof: %s holds a %T, not an Ed25519 key", file, k)
	}
	return json.NewEncoder(stdout).Encode(map[string]string{
		"public_key": base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)),
		"proof":      store.SignProof(name, priv),
	})
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
