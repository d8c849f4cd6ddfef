//! The content-addressed cache of nvcc outputs (README, "Build cache"): one file per key
//! ([`super::fingerprint::key`]) holding the cubin and nvcc's stderr (the ptxas report).
//!
//! Location: `$MPKC_CACHE_DIR`, else `$XDG_CACHE_HOME/mpkc`, else `$HOME/.cache/mpkc`; entries
//! live under `nvcc-v1/<first two hex digits>/<the other 62>`. Writes are atomic: a temporary
//! file in the entry's folder, renamed over the entry, so a reader sees a whole entry or none,
//! and concurrent builds storing the same key both leave a whole entry. Every entry carries the
//! SHA-256 of its payload and the cubin must be an ELF file: an entry that fails either check
//! (truncated, overwritten, bit-flipped) is reported as corrupt and rebuilt. mpkc never evicts:
//! delete the folder to empty it.

use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The environment variable that relocates the cache.
pub const DIR_ENV: &str = "MPKC_CACHE_DIR";

/// First line of every entry (the layout's version).
const MAGIC: &[u8] = b"mpkc nvcc cache entry v1\n";

/// A cached nvcc output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The cubin's bytes.
    pub cubin: Vec<u8>,
    /// nvcc's stderr (the `-Xptxas -v` report).
    pub stderr: String,
}

/// What a lookup found.
#[derive(Clone, Debug)]
pub enum Lookup {
    /// A whole, verified entry.
    Hit(Entry),
    /// No entry.
    Miss,
    /// An entry that failed verification, and why.
    Corrupt(String),
}

/// The cache in one folder.
#[derive(Clone, Debug)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// The cache whose entries live under `dir` (`dir/nvcc-v1/…`).
    pub fn at(dir: &Path) -> Cache {
        Cache {
            root: dir.join("nvcc-v1"),
        }
    }

    /// The default folder: `$MPKC_CACHE_DIR`, `$XDG_CACHE_HOME/mpkc` or `$HOME/.cache/mpkc`
    /// (the first that is set and not empty); `None` when none is.
    pub fn default_dir() -> Option<PathBuf> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        var(DIR_ENV)
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("mpkc")))
            .or_else(|| var("HOME").map(|d| d.join(".cache/mpkc")))
    }

    /// The folder given to [`Cache::at`].
    pub fn dir(&self) -> &Path {
        self.root.parent().unwrap_or(&self.root)
    }

    /// The entry file of `key` (64 hex digits).
    pub fn entry_path(&self, key: &str) -> PathBuf {
        let (shard, rest) = key.split_at(key.len().min(2));
        self.root.join(shard).join(rest)
    }

    /// Looks `key` up. A file that cannot be read counts as a miss.
    pub fn load(&self, key: &str) -> Lookup {
        match std::fs::read(self.entry_path(key)) {
            Ok(bytes) => match decode(&bytes) {
                Ok(e) => Lookup::Hit(e),
                Err(why) => Lookup::Corrupt(why),
            },
            Err(_) => Lookup::Miss,
        }
    }

    /// Stores `entry` under `key`, atomically (temporary file + rename in the entry's folder).
    /// Errors name the file that could not be written.
    pub fn store(&self, key: &str, entry: &Entry) -> Result<(), String> {
        let path = self.entry_path(key);
        let folder = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(folder)
            .map_err(|e| format!("cannot create the cache folder {}: {e}", folder.display()))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(folder)
            .map_err(|e| format!("cannot create a file in {}: {e}", folder.display()))?;
        tmp.write_all(&encode(entry))
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| format!("cannot write {}: {e}", tmp.path().display()))?;
        tmp.persist(&path)
            .map_err(|e| format!("cannot rename into {}: {}", path.display(), e.error))?;
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn digest(cubin: &[u8], stderr: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(cubin);
    h.update(stderr);
    hex(&h.finalize())
}

/// The bytes of an entry: the magic line, `<sha256 of the payload> <cubin length> <stderr
/// length>\n`, then the cubin and the stderr.
pub fn encode(e: &Entry) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(
        format!(
            "{} {} {}\n",
            digest(&e.cubin, e.stderr.as_bytes()),
            e.cubin.len(),
            e.stderr.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&e.cubin);
    out.extend_from_slice(e.stderr.as_bytes());
    out
}

/// Parses and verifies an entry; the error says what is wrong with it.
pub fn decode(bytes: &[u8]) -> Result<Entry, String> {
    let rest = bytes
        .strip_prefix(MAGIC)
        .ok_or("it does not start with the entry header")?;
    let nl = rest
        .iter()
        .position(|b| *b == b'\n')
        .ok_or("its header line is cut off")?;
    let header = std::str::from_utf8(&rest[..nl]).map_err(|_| "its header is not text")?;
    let payload = &rest[nl + 1..];
    let fields: Vec<&str> = header.split(' ').collect();
    let [sum, cubin_len, stderr_len] = fields[..] else {
        return Err(format!("its header `{header}` does not have 3 fields"));
    };
    let (Ok(cubin_len), Ok(stderr_len)) = (cubin_len.parse::<usize>(), stderr_len.parse::<usize>())
    else {
        return Err(format!(
            "its header `{header}` has a length that is not a number"
        ));
    };
    if cubin_len.checked_add(stderr_len) != Some(payload.len()) {
        return Err(format!(
            "it holds {} bytes after the header where the header says {cubin_len} + {stderr_len}",
            payload.len()
        ));
    }
    let (cubin, stderr) = payload.split_at(cubin_len);
    if digest(cubin, stderr) != sum {
        return Err("its SHA-256 does not match its contents".to_string());
    }
    if !cubin.starts_with(b"\x7fELF") {
        return Err("its cubin is not an ELF file".to_string());
    }
    let stderr = String::from_utf8(stderr.to_vec()).map_err(|_| "its stderr is not UTF-8")?;
    Ok(Entry {
        cubin: cubin.to_vec(),
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            cubin: b"\x7fELF\x02\x01\x01rest of a cubin".to_vec(),
            stderr: "ptxas info    : Used 40 registers\n".to_string(),
        }
    }

    #[test]
    fn round_trips_and_detects_every_kind_of_damage() {
        let bytes = encode(&entry());
        assert_eq!(decode(&bytes).unwrap(), entry());
        // Truncated anywhere.
        for cut in [0, 10, MAGIC.len() + 5, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        // Any payload byte flipped.
        let header_end = MAGIC.len()
            + bytes[MAGIC.len()..]
                .iter()
                .position(|b| *b == b'\n')
                .unwrap()
            + 1;
        for i in header_end..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x20;
            assert!(decode(&b).is_err(), "byte {i} flipped");
        }
        // A well-formed entry whose cubin is not ELF.
        let not_elf = Entry {
            cubin: b"garbage".to_vec(),
            stderr: String::new(),
        };
        assert!(decode(&encode(&not_elf)).unwrap_err().contains("ELF"));
    }

    #[test]
    fn stores_atomically_and_loads() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::at(d.path());
        let key = "ab".to_string() + &"0".repeat(62);
        assert!(matches!(c.load(&key), Lookup::Miss));
        c.store(&key, &entry()).unwrap();
        assert!(matches!(c.load(&key), Lookup::Hit(e) if e == entry()));
        // No temporary file is left beside the entry.
        let folder = c.entry_path(&key).parent().unwrap().to_path_buf();
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1);
        std::fs::write(c.entry_path(&key), b"mpkc nvcc cache entry v1\nxx").unwrap();
        assert!(matches!(c.load(&key), Lookup::Corrupt(_)));
        c.store(&key, &entry()).unwrap();
        assert!(matches!(c.load(&key), Lookup::Hit(_)), "overwritten whole");
    }
}
