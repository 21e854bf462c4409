// Command ferretdb runs an embedded FerretDB (MongoDB wire protocol) server
// backed by PostgreSQL or SQLite, for mailroom's local runs and integration tests.
//
// Usage:
//
//	ferretdb --listen 127.0.0.1:27018 --postgresql-url postgres://postgres@127.0.0.1:5432/postgres
//	ferretdb --listen 127.0.0.1:27018 --state-dir /tmp/mailroom-ferret
//
// Every flag can also be given through the environment (FERRETDB_LISTEN,
// FERRETDB_POSTGRESQL_URL, FERRETDB_STATE_DIR, FERRETDB_SQLITE_URL, FERRETDB_LOG_LEVEL);
// flags win over the environment. Once the listener is bound, a single line
// "ferretdb ready mongodb://HOST:PORT/" is printed on stdout. The process runs
// until SIGINT or SIGTERM and then shuts down cleanly (exit status 0).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/FerretDB/FerretDB/build/version"
	"github.com/FerretDB/FerretDB/ferretdb"
)

const ferretModule = "github.com/FerretDB/FerretDB"

// ferretVersion returns the FerretDB module version compiled in, e.g. "v1.24.2".
func ferretVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == ferretModule {
				return d.Version
			}
		}
	}
	return ""
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

// sqliteURL turns a directory into the "file:DIR/" URI the SQLite backend expects.
func sqliteURL(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p := (&url.URL{Path: abs}).EscapedPath()
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return "file:" + p, nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

func run() error {
	listen := flag.String("listen", envOr("FERRETDB_LISTEN", "127.0.0.1:27018"),
		"TCP address to listen on (host:port; port 0 picks a free port)")
	stateDir := flag.String("state-dir", envOr("FERRETDB_STATE_DIR", ""),
		"directory for the SQLite databases (created if missing; required unless --sqlite-url is set)")
	sqlite := flag.String("sqlite-url", envOr("FERRETDB_SQLITE_URL", ""),
		"SQLite URI such as file:/path/to/dir/ (overrides --state-dir)")
	postgresql := flag.String("postgresql-url", envOr("FERRETDB_POSTGRESQL_URL", ""),
		"PostgreSQL URL such as postgres://user@127.0.0.1:5432/db: the PostgreSQL backend instead of SQLite")
	logLevel := flag.String("log-level", envOr("FERRETDB_LOG_LEVEL", "warn"),
		"log level: debug, info, warn or error")
	showVersion := flag.Bool("version", false, "print the FerretDB version and exit")
	flag.Parse()

	// FerretDB only fills in its version when it is the main module; report
	// the embedded module's version (buildInfo.ferretdbVersion) instead of "unknown".
	if v := ferretVersion(); v != "" {
		version.Get().Version = v
	}
	if *showVersion {
		fmt.Println(version.Get().Version)
		return nil
	}

	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", flag.Args())
	}

	level, err := parseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("bad --log-level %q: %w", *logLevel, err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	config := &ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: *listen},
		Logger:   logger,
	}
	uri := *sqlite
	switch {
	case *postgresql != "":
		config.Handler = "postgresql"
		config.PostgreSQLURL = *postgresql
	case uri == "":
		if *stateDir == "" {
			return fmt.Errorf("one of --postgresql-url, --state-dir or --sqlite-url is required")
		}
		if err := os.MkdirAll(*stateDir, 0o755); err != nil {
			return fmt.Errorf("creating state dir: %w", err)
		}
		if uri, err = sqliteURL(*stateDir); err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
		fallthrough
	default:
		config.Handler = "sqlite"
		config.SQLiteURL = uri
	}

	f, err := ferretdb.New(config)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The listener is already bound by ferretdb.New, so clients can connect now.
	fmt.Printf("ferretdb ready %s\n", f.MongoDBURI())

	return f.Run(ctx)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: %v\n", err)
		os.Exit(1)
	}
}
