//! Which of a plan's tasks a `batch run` takes: all, one, or a shard (`I/N`
//! given, or read from a job array's variables, which
//! [`mapfilter_core::switches::Environment`] holds).

use mapfilter_core::bail;
use mapfilter_core::error::{Error, Result, Setting};

/// Which tasks a run takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    All,
    /// Tasks whose index modulo `count` is `index`.
    Shard {
        index: usize,
        count: usize,
    },
    Task(usize),
}

impl Share {
    /// `I/N` as given to `--shard`.
    pub fn parse_shard(text: &str) -> Result<Share> {
        let hint = format!(
            "write {} with 0 <= I < N, e.g. {}",
            Setting::Shard.is("I/N"),
            Setting::Shard.is("0/4")
        );
        let (i, n) = text.split_once('/').ok_or_else(|| {
            Error::usage(format!("{}: no '/'", Setting::Shard.is(text))).hint(hint.clone())
        })?;
        let parse = |s: &str| {
            s.trim().parse::<usize>().map_err(|_| {
                Error::usage(format!(
                    "{}: '{s}' is not a number",
                    Setting::Shard.is(text)
                ))
                .hint(hint.clone())
            })
        };
        Self::shard(parse(i)?, parse(n)?).map_err(|e| e.hint(hint))
    }

    fn shard(index: usize, count: usize) -> Result<Share> {
        if count == 0 || index >= count {
            bail!(usage, format!("shard {index} of {count} does not exist"));
        }
        Ok(Share::Shard { index, count })
    }

    /// The share a job array gives this process: SLURM's
    /// `SLURM_ARRAY_TASK_ID`/`SLURM_ARRAY_TASK_COUNT` (less
    /// `SLURM_ARRAY_TASK_MIN`), or Kubernetes' `JOB_COMPLETION_INDEX` with
    /// the count in `MAPFILTER_SHARDS`. `None` outside a job array.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Share>> {
        let num = |name: &str| -> Result<Option<usize>> {
            var(name)
                .map(|v| {
                    v.trim().parse::<usize>().map_err(|_| {
                        Error::usage(format!("${name} is '{v}', not a number")).hint(format!(
                            "run inside a job array, or give {}",
                            Setting::Shard.is("I/N")
                        ))
                    })
                })
                .transpose()
        };
        if let (Some(id), Some(count)) =
            (num("SLURM_ARRAY_TASK_ID")?, num("SLURM_ARRAY_TASK_COUNT")?)
        {
            let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            return Self::shard(id.saturating_sub(min), count).map(Some);
        }
        if let Some(index) = num("JOB_COMPLETION_INDEX")? {
            let count = num("MAPFILTER_SHARDS")?.ok_or_else(|| {
                Error::usage("JOB_COMPLETION_INDEX is set but MAPFILTER_SHARDS is not")
                    .hint("set MAPFILTER_SHARDS to the Job's completions")
            })?;
            return Self::shard(index, count).map(Some);
        }
        Ok(None)
    }

    pub(super) fn takes(&self, task: usize) -> bool {
        match *self {
            Share::All => true,
            Share::Shard { index, count } => task % count == index,
            Share::Task(k) => task == k,
        }
    }
}
