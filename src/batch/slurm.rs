//! `batch plan --emit slurm`: a ready `sbatch` script running the plan as a
//! job array, one shard per array task (`batch run` reads its shard from
//! `SLURM_ARRAY_TASK_ID`/`SLURM_ARRAY_TASK_COUNT`).

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
pub fn script(dir: &Path, exe: &Path, o: &SlurmOptions) -> String {
    let q = |p: &Path| shell_quote(&p.to_string_lossy());
    format!(
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
        logs = dir.join("logs").to_string_lossy(),
        exe = q(exe),
        dir = q(dir),
    )
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:=".contains(c))
    {
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
        let s = script(Path::new("/data/b"), Path::new("/bin/mapfilter"), &o);
        assert!(s.contains("#SBATCH --array=0-3%2"), "{s}");
        assert!(s.contains("exec /bin/mapfilter batch run /data/b"), "{s}");
        assert!(!s.contains("--gres"), "{s}");
        let s = script(
            Path::new("/data/b"),
            Path::new("/bin/mapfilter"),
            &SlurmOptions { gpus: 1, ..o },
        );
        assert!(
            s.contains("#SBATCH --time=01:00:00\n#SBATCH --gres=gpu:1\n"),
            "{s}"
        );
    }
}
