//! `batch plan --emit slurm`: a ready `sbatch` script running the plan as a
//! job array, one shard per array task (`batch run` reads its shard from
//! `SLURM_ARRAY_TASK_ID`/`SLURM_ARRAY_TASK_COUNT`).
//!
//! Nothing given reaches the script unchecked: `#SBATCH` lines are parsed
//! by sbatch, not by the shell, so their values (memory, time, the logs
//! folder) are refused unless made of characters that cannot end the line,
//! split the value or start a filename pattern (`%`); the shell lines quote
//! every path.

use mapfilter_core::bail;
use mapfilter_core::error::{Result, Setting};
use std::path::Path;

/// Resources and shape of the job array.
pub struct SlurmOptions {
    /// Array tasks (shards).
    pub shards: usize,
    /// Array tasks running at once (`%K`).
    pub parallel: usize,
    pub cpus_per_task: usize,
    /// Memory per array task, as sbatch takes it (e.g. `8G`).
    pub mem: String,
    /// Wall-time limit per array task (e.g. `02:00:00`).
    pub time: String,
    /// GPUs per array task (`--gres=gpu:N`; none when 0).
    pub gpus: usize,
}

/// The script: `dir` and `exe` absolute, so it runs from any directory.
pub fn script(dir: &Path, exe: &Path, o: &SlurmOptions) -> Result<String> {
    let logs = check(dir, o)?;
    // Quoted, a path may hold anything but a line break or another
    // control character (a quoted newline is legal, but no one reading
    // the script would see one word).
    if exe.to_string_lossy().chars().any(char::is_control) {
        bail!(
            input,
            format!(
                "mapfilter's path {:?} holds a control character",
                exe.as_os_str()
            ),
            hint = "install mapfilter under a plain path"
        );
    }
    let q = |p: &Path| shell_quote(&p.to_string_lossy());
    Ok(format!(
        "#!/bin/bash\n\
         # Written by `mapfilter batch plan --emit slurm`. Submit with: sbatch {script}\n\
         # Each array task runs one shard of the plan; run it again to resume.\n\
         #SBATCH --job-name=mapfilter-batch\n\
         #SBATCH --array=0-{last}%{parallel}\n\
         #SBATCH --cpus-per-task={cpus}\n\
         #SBATCH --mem={mem}\n\
         #SBATCH --time={time}\n\
         {gres}\
         #SBATCH --output={logs}/slurm-%A_%a.out\n\
         set -euo pipefail\n\
         export RAYON_NUM_THREADS=\"${{SLURM_CPUS_PER_TASK:-{cpus}}}\"\n\
         exec {exe} batch run {dir} --jobs 1\n",
        script = q(&dir.join("batch.sbatch")),
        last = o.shards.max(1) - 1,
        parallel = o.parallel.max(1),
        cpus = o.cpus_per_task.max(1),
        mem = o.mem,
        time = o.time,
        gres = if o.gpus > 0 {
            format!("#SBATCH --gres=gpu:{}\n", o.gpus)
        } else {
            String::new()
        },
        logs = logs,
        exe = q(exe),
        dir = q(dir),
    ))
}

/// Checks the values of the `#SBATCH` lines (before anything is
/// planned): the memory, the time and the logs folder `dir/logs`, which is
/// returned.
pub fn check(dir: &Path, o: &SlurmOptions) -> Result<String> {
    check_mem(&o.mem)?;
    check_time(&o.time)?;
    let logs = dir.join("logs");
    logs.to_str()
        .filter(|l| l.chars().all(plain))
        .map(str::to_string)
        .ok_or_else(|| {
            mapfilter_core::error::Error::usage(format!(
                "the batch directory {:?} cannot be written into an #SBATCH line (it holds a space, a quote, a newline, % or another special character)",
                dir.as_os_str()
            ))
            .hint(format!(
                "give {} a path of letters, digits and / . _ - + , : @ =",
                Setting::Out
            ))
        })
}

/// A character that means nothing to sbatch's option parser nor to a shell.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "/._-+,:@=".contains(c)
}

/// `--slurm-mem`: a number with an optional unit, as sbatch takes it.
fn check_mem(mem: &str) -> Result<()> {
    let digits = mem.trim_end_matches(['K', 'M', 'G', 'T', 'k', 'm', 'g', 't']);
    let unit = mem.len() - digits.len();
    if digits.is_empty() || unit > 1 || !digits.chars().all(|c| c.is_ascii_digit()) {
        bail!(
            usage,
            format!(
                "{} is not an amount of memory",
                Setting::SlurmMem.is(format!("{mem:?}"))
            ),
            hint = format!(
                "give a number with an optional unit K, M, G or T, e.g. {}",
                Setting::SlurmMem.is("8G")
            )
        );
    }
    Ok(())
}

/// `--slurm-time`: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or
/// UNLIMITED.
fn check_time(time: &str) -> Result<()> {
    let (days, clock) = time.split_once('-').unwrap_or(("0", time));
    let number = |s: &str| !s.is_empty() && s.len() <= 6 && s.chars().all(|c| c.is_ascii_digit());
    let parts: Vec<&str> = clock.split(':').collect();
    let ok = time.eq_ignore_ascii_case("unlimited")
        || (number(days) && parts.len() <= 3 && parts.iter().all(|p| number(p)));
    if !ok {
        bail!(
            usage,
            format!(
                "{} is not a time limit",
                Setting::SlurmTime.is(format!("{time:?}"))
            ),
            hint = format!(
                "give minutes, HH:MM:SS or D-HH:MM:SS, e.g. {}",
                Setting::SlurmTime.is("04:00:00")
            )
        );
    }
    Ok(())
}

fn shell_quote(s: &str) -> String {
    if s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_covers_every_shard() {
        let o = SlurmOptions {
            shards: 4,
            parallel: 2,
            cpus_per_task: 2,
            mem: "4G".into(),
            time: "01:00:00".into(),
            gpus: 0,
        };
        let s = script(Path::new("/data/b"), Path::new("/bin/mapfilter"), &o).unwrap();
        assert!(s.contains("#SBATCH --array=0-3%2"), "{s}");
        assert!(s.contains("exec /bin/mapfilter batch run /data/b"), "{s}");
        assert!(!s.contains("--gres"), "{s}");
        let s = script(
            Path::new("/data/b"),
            Path::new("/bin/mapfilter"),
            &SlurmOptions { gpus: 1, ..o },
        )
        .unwrap();
        assert!(
            s.contains("#SBATCH --time=01:00:00\n#SBATCH --gres=gpu:1\n"),
            "{s}"
        );
    }

    fn options(mem: &str, time: &str) -> SlurmOptions {
        SlurmOptions {
            shards: 2,
            parallel: 1,
            cpus_per_task: 1,
            mem: mem.into(),
            time: time.into(),
            gpus: 0,
        }
    }

    /// Hostile values and directories are refused before a script is
    /// written; paths with quotes reach only quoted shell words.
    #[test]
    fn hostile_values_and_names_never_reach_the_script() {
        let exe = Path::new("/bin/mapfilter");
        let dir = Path::new("/data/b");
        for mem in [
            "8G\ntouch pwned",
            "8G; touch pwned",
            "$(touch pwned)",
            "8GG",
            "",
            "G",
        ] {
            let e = script(dir, exe, &options(mem, "01:00:00")).unwrap_err();
            assert!(
                e.to_string().contains(&Setting::SlurmMem.to_string()),
                "{e}"
            );
        }
        for time in ["1:00\ntouch pwned", "`id`", "1::2", "1-2-3", "1:2:3:4", ""] {
            let e = script(dir, exe, &options("8G", time)).unwrap_err();
            assert!(
                e.to_string().contains(&Setting::SlurmTime.to_string()),
                "{e}"
            );
        }
        for ok in ["30", "10:00", "02:00:00", "1-12", "1-12:30:00", "UNLIMITED"] {
            script(dir, exe, &options("512M", ok)).unwrap();
        }
        for bad in [
            "/data/a b",
            "/data/x\ntouch pwned",
            "/data/it's",
            "/data/%A",
            "/data/$(id)",
        ] {
            let e = script(Path::new(bad), exe, &options("8G", "10")).unwrap_err();
            assert!(e.to_string().contains("#SBATCH"), "{e}");
        }
        // An executable's path with a quote stays one shell word; one with
        // a newline is refused.
        let s = script(
            dir,
            Path::new("/opt/it's bin/mapfilter"),
            &options("8G", "10"),
        )
        .unwrap();
        assert!(
            s.contains("exec '/opt/it'\\''s bin/mapfilter' batch run /data/b --jobs 1\n"),
            "{s}"
        );
        assert!(script(dir, Path::new("/opt/x\ny/mapfilter"), &options("8G", "10")).is_err());
        // Every line is a comment, an #SBATCH line or one of the script's own.
        for line in s.lines().filter(|l| !l.starts_with('#')) {
            assert!(
                ["set ", "export ", "exec "]
                    .iter()
                    .any(|p| line.starts_with(p)),
                "{line:?} in {s}"
            );
        }
    }
}
