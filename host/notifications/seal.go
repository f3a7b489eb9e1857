package notifications

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
)

// sealInfo labels the key derived for channel secrets, so that it differs
// from every other key derived from the same secret.
const sealInfo = "steward notification channel secrets v1"

// sealer seals channel secrets with AES-256-GCM under a key derived with
// HKDF-SHA256 from the host's secret. The channel's id is the additional
// data, so a sealed secret copied onto another channel does not open.
type sealer struct{ aead cipher.AEAD }

func newSealer(secret []byte) (*sealer, error) {
	if len(secret) == 0 {
		return nil, errors.New("notifications: a secret is required to seal channel secrets")
	}
	key, err := hkdf.Key(sha256.New, secret, nil, sealInfo, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(channelID string, sec Secrets) ([]byte, error) {
	plain, err := json.Marshal(sec)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, plain, []byte(channelID)), nil
}

func (s *sealer) open(channelID string, sealed []byte) (Secrets, error) {
	var sec Secrets
	if len(sealed) == 0 {
		return sec, nil
	}
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return sec, errors.New("notifications: sealed secret too short")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(channelID))
	if err != nil {
		return sec, fmt.Errorf("notifications: channel %s's secret does not open (was the host's secret changed?): %w", channelID, err)
	}
	return sec, json.Unmarshal(plain, &sec)
}
