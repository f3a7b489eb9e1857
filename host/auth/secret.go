package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// EnvDevelopment is the only environment in which the development secret
// and the development login may be used. Any other name, including a
// misspelt one, gets the strict behaviour.
const EnvDevelopment = "development"

// DevSecretFile is the name of the development secret inside the data
// directory.
const DevSecretFile = "jwt-secret"

// Errors of secret selection and development login.
var (
	ErrSecretRequired   = errors.New("auth: a signing secret must be configured outside development")
	ErrDevLoginDisabled = errors.New("auth: development login is disabled")
	ErrBadCredentials   = errors.New("auth: bad credentials")
)

// SecretFromEnv validates a secret supplied through configuration. The
// value is used as is, so any string of at least MinSecretLen bytes works,
// for example 64 hex digits.
func SecretFromEnv(value string) ([]byte, error) {
	if len(value) < MinSecretLen {
		return nil, fmt.Errorf("auth: signing secret is %d bytes, want at least %d", len(value), MinSecretLen)
	}
	return []byte(value), nil
}

// LoadOrCreateDevSecret returns the development signing secret kept in
// dataDir, creating it with 32 random bytes on first use. The file is
// readable by its owner only.
//
// It is meant for development alone: the secret lives next to the data and
// is never rotated. Use SelectSecret, which calls it only when env is
// development, so that staging and production cannot start on it.
func LoadOrCreateDevSecret(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, DevSecretFile)
	secret, err := readDevSecret(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: create data dir: %w", err)
	}

	secret = make([]byte, MinSecretLen)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("auth: generate dev secret: %w", err)
	}
	// Written to a temporary file (which CreateTemp makes with mode 0600)
	// and linked into place so that the secret appears whole or not at all,
	// and so that when two processes start together both end up with
	// whichever secret got there first.
	tmp, err := os.CreateTemp(dataDir, DevSecretFile+".*")
	if err != nil {
		return nil, fmt.Errorf("auth: create dev secret: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(secret); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("auth: write dev secret: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("auth: write dev secret: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readDevSecret(path)
		}
		return nil, fmt.Errorf("auth: store dev secret: %w", err)
	}
	return secret, nil
}

func readDevSecret(path string) ([]byte, error) {
	secret, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("auth: read dev secret: %w", err)
	}
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("auth: dev secret in %s is %d bytes, want at least %d; delete it to have a new one made", path, len(secret), MinSecretLen)
	}
	return secret, nil
}

// SelectSecret applies the host's secret policy. A configured value always
// wins. Without one, development falls back to the development secret in
// dataDir, and every other environment fails with ErrSecretRequired, which
// is how the host refuses to start staging or production on the
// development secret. isDev reports that the development secret was chosen.
func SelectSecret(env, configured, dataDir string) (secret []byte, isDev bool, err error) {
	if configured != "" {
		secret, err = SecretFromEnv(configured)
		return secret, false, err
	}
	if env != EnvDevelopment {
		return nil, false, fmt.Errorf("%w (environment %q)", ErrSecretRequired, env)
	}
	secret, err = LoadOrCreateDevSecret(dataDir)
	return secret, err == nil, err
}

// CheckDevCredentials checks a development login against the configured
// user and password. It returns ErrDevLoginDisabled outside development or
// when no credentials are configured, and ErrBadCredentials on a mismatch.
// The comparison takes the same time whichever part differs and however
// long the inputs are, so it reveals nothing about the expected values.
func CheckDevCredentials(env, wantUser, wantPass, gotUser, gotPass string) error {
	if env != EnvDevelopment || wantUser == "" || wantPass == "" {
		return ErrDevLoginDisabled
	}
	userOK := equalConstantTime(wantUser, gotUser)
	passOK := equalConstantTime(wantPass, gotPass)
	if userOK&passOK != 1 {
		return ErrBadCredentials
	}
	return nil
}

// equalConstantTime compares digests because subtle.ConstantTimeCompare
// returns early, and so leaks, when the lengths differ.
func equalConstantTime(a, b string) int {
	da, db := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(da[:], db[:])
}
