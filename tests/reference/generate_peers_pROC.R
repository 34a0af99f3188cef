# Reference values for medaudit's partial AUC, cut-points, curve reading and power, from R + pROC.
#
# Regenerate (from the repository root):
#     Rscript tests/reference/generate_peers_pROC.R
#
# Writes, next to this script:
#   peers_pROC_data.csv    the exact inputs (dataset,item,y_true,score_a,score_b);
#   pauc_pROC.csv          auc(roc, partial.auc, partial.auc.focus, partial.auc.correct);
#   coords_best_pROC.csv   coords(roc, "best", best.method, best.weights): every tied row;
#   coords_sp_pROC.csv     coords(roc, x, input = "specificity", ret = "sensitivity");
#   coords_se_pROC.csv     coords(roc, x, input = "sensitivity", ret = "specificity");
#   power_pROC.csv         power.roc.test for one curve (auc, kappa) and two paired curves.
#
# Conventions (fixed, never automatic):
#   roc(response = y_true, predictor = score, levels = c(0, 1), direction = "<", quiet = TRUE).
#   Partial AUCs use allow.invalid.partial.auc.correct = TRUE so that a curve below the
#   diagonal still gets McClish's formula (pROC otherwise returns NA); column
#   below_diagonal flags those rows (pROC's default would be NA there).
#   pROC's "best" thresholds are midpoints between consecutive observed scores (and
#   -Inf/Inf); medaudit reports the observed score and the midpoint (threshold_midpoint).
# Numbers are written with sprintf("%.17g") (exact round trip, checked).

suppressPackageStartupMessages(library(pROC))
RNGkind(kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")

script_dir <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  if (length(arg) == 1) dirname(normalizePath(sub("^--file=", "", arg))) else "tests/reference"
})

fmt <- function(x) {
  out <- sprintf("%.17g", x)
  out[is.na(x)] <- "NA"
  out[is.infinite(x) & x > 0] <- "inf"
  out[is.infinite(x) & x < 0] <- "-inf"
  ok <- is.finite(x)
  stopifnot(identical(as.numeric(out[ok]), as.numeric(x[ok])))
  out
}

# ------------------------------------------------------------------------------- data
datasets <- list()
data(aSAH, package = "pROC")
datasets$aSAH <- data.frame(y_true = as.integer(aSAH$outcome == "Poor"),
                            score_a = as.numeric(aSAH$s100b),
                            score_b = as.numeric(as.character(aSAH$wfns)))
datasets$small_ties <- data.frame(
  y_true  = c(0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1),
  score_a = c(0.1, 0.2, 0.3, 0.3, 0.5, 0.5, 0.7, 0.3, 0.5, 0.6, 0.7, 0.9),
  score_b = c(1, 2, 2, 3, 3, 4, 2, 3, 3, 4, 5, 4))
# two tied Youden optima (J = 1.5 at thresholds 4 and 2 with observed-score thresholds)
datasets$youden_tie <- data.frame(y_true = c(0, 1, 0, 1), score_a = c(1, 2, 3, 4),
                                  score_b = c(4, 3, 2, 1))
set.seed(2026)
local({
  y <- sample(c(rep(1L, 80), rep(0L, 120)))
  a <- rnorm(200) + 1.0 * y
  b <- 0.6 * a + rnorm(200, sd = 0.8) + 0.3 * y
  datasets$binormal_200 <<- data.frame(y_true = y, score_a = round(a, 2), score_b = round(b, 2))
})
set.seed(20261117)
local({
  y <- sample(c(rep(1L, 40), rep(0L, 160)))
  a <- rnorm(200) + 1.2 * y
  b <- rnorm(200) + 0.5 * y + 0.4 * a
  datasets$continuous_200 <<- data.frame(y_true = y, score_a = a, score_b = b)
})
# a poor score (AUC near or below 0.5 in places): McClish's formula below the diagonal
set.seed(7)
local({
  y <- sample(c(rep(1L, 30), rep(0L, 30)))
  a <- round(rnorm(60) - 0.2 * y, 1)
  b <- round(rnorm(60) + 0.3 * y, 1)
  datasets$weak_60 <<- data.frame(y_true = y, score_a = a, score_b = b)
})

mk <- function(y, s) roc(response = y, predictor = s, levels = c(0, 1), direction = "<",
                         quiet = TRUE)

# ------------------------------------------------------------------------ partial AUC
ranges <- list(c(1, 0.9), c(1, 0.8), c(0.9, 0.6), c(0.95, 0.05), c(1, 0), c(0.5, 0.3))
pauc_rows <- list()
for (nm in names(datasets)) {
  d <- datasets[[nm]]
  for (curve in c("a", "b")) {
    r <- mk(d$y_true, d[[paste0("score_", curve)]])
    for (focus in c("specificity", "sensitivity")) {
      for (rg in ranges) {
        for (correct in c(FALSE, TRUE)) {
          if (correct && identical(rg, c(1, 0))) next  # McClish is for partial ranges
          v <- suppressWarnings(as.numeric(auc(r, partial.auc = rg, partial.auc.focus = focus,
                                               partial.auc.correct = correct,
                                               allow.invalid.partial.auc.correct = TRUE)))
          raw <- as.numeric(auc(r, partial.auc = rg, partial.auc.focus = focus))
          amin <- (2 - rg[1] - rg[2]) * (rg[1] - rg[2]) / 2
          pauc_rows[[length(pauc_rows) + 1]] <- data.frame(
            dataset = nm, curve = curve, focus = focus, lo = rg[2], hi = rg[1],
            correct = as.integer(correct), pauc = v,
            below_diagonal = as.integer(correct && raw < amin))
        }
      }
    }
  }
}
pauc_df <- do.call(rbind, pauc_rows)

# ------------------------------------------------------------------------ coords best
weights <- list(c(1, 0.5), c(2, 0.5), c(1, 0.2), c(0.5, 0.3))
best_rows <- list()
for (nm in names(datasets)) {
  d <- datasets[[nm]]
  for (curve in c("a", "b")) {
    r <- mk(d$y_true, d[[paste0("score_", curve)]])
    for (method in c("youden", "closest.topleft")) {
      for (w in weights) {
        cc <- coords(r, "best", best.method = method, best.weights = w,
                     ret = c("threshold", "sensitivity", "specificity"), transpose = FALSE)
        cc <- as.data.frame(cc)
        best_rows[[length(best_rows) + 1]] <- data.frame(
          dataset = nm, curve = curve, method = method, cost = w[1], prevalence = w[2],
          n_tied = nrow(cc), threshold = cc$threshold, sensitivity = cc$sensitivity,
          specificity = cc$specificity)
      }
    }
  }
}
best_df <- do.call(rbind, best_rows)

# -------------------------------------- se at fixed specificity, and sp at fixed sensitivity
grid <- c(0, 0.1, 0.25, 0.5, 0.73, 0.8, 0.85, 0.9, 0.95, 0.975, 1)
sp_rows <- list()
se_rows <- list()
for (nm in names(datasets)) {
  d <- datasets[[nm]]
  for (curve in c("a", "b")) {
    r <- mk(d$y_true, d[[paste0("score_", curve)]])
    se <- coords(r, grid, input = "specificity", ret = "sensitivity", transpose = FALSE)
    sp <- coords(r, grid, input = "sensitivity", ret = "specificity", transpose = FALSE)
    sp_rows[[length(sp_rows) + 1]] <- data.frame(dataset = nm, curve = curve,
                                                 specificity = grid,
                                                 sensitivity = as.numeric(se$sensitivity))
    se_rows[[length(se_rows) + 1]] <- data.frame(dataset = nm, curve = curve,
                                                 sensitivity = grid,
                                                 specificity = as.numeric(sp$specificity))
  }
}
sp_df <- do.call(rbind, sp_rows)
se_df <- do.call(rbind, se_rows)

# ---------------------------------------------------------------------------- power
pw_rows <- list()
for (auc_v in c(0.65, 0.8, 0.9)) {
  for (kappa in c(1, 1.7, 4)) {
    for (alt in c("two.sided", "one.sided")) {
      p <- power.roc.test(auc = auc_v, sig.level = 0.05, power = 0.8, kappa = kappa,
                          alternative = alt)
      pw_rows[[length(pw_rows) + 1]] <- data.frame(
        question = "one_curve_n", dataset = "", auc = auc_v, kappa = kappa,
        alternative = alt, sig_level = 0.05, power = 0.8, ncases = p$ncases,
        ncontrols = p$ncontrols)
      q <- power.roc.test(auc = auc_v, sig.level = 0.05, ncases = 30, ncontrols = 30 * kappa,
                          alternative = alt)
      pw_rows[[length(pw_rows) + 1]] <- data.frame(
        question = "one_curve_power", dataset = "", auc = auc_v, kappa = kappa,
        alternative = alt, sig_level = 0.05, power = q$power, ncases = 30,
        ncontrols = 30 * kappa)
    }
  }
}
for (nm in c("aSAH", "binormal_200", "continuous_200")) {
  d <- datasets[[nm]]
  ra <- mk(d$y_true, d$score_a)
  rb <- mk(d$y_true, d$score_b)
  for (alt in c("two.sided", "one.sided")) {
    for (pw in c(0.8, 0.9)) {
      p <- power.roc.test(ra, rb, sig.level = 0.05, power = pw, alternative = alt)
      pw_rows[[length(pw_rows) + 1]] <- data.frame(
        question = "two_curves_n", dataset = nm, auc = as.numeric(ra$auc) - as.numeric(rb$auc),
        kappa = length(ra$controls) / length(ra$cases), alternative = alt, sig_level = 0.05,
        power = pw, ncases = p$ncases, ncontrols = p$ncontrols)
    }
    q <- power.roc.test(ra, rb, sig.level = 0.05, alternative = alt)
    pw_rows[[length(pw_rows) + 1]] <- data.frame(
      question = "two_curves_power", dataset = nm, auc = as.numeric(ra$auc) - as.numeric(rb$auc),
      kappa = length(ra$controls) / length(ra$cases), alternative = alt, sig_level = 0.05,
      power = q$power, ncases = length(ra$cases), ncontrols = length(ra$controls))
  }
}
pw_df <- do.call(rbind, pw_rows)

# ---------------------------------------------------------------------------- output
header <- c(
  "# Reference values produced by R + pROC; do not edit by hand.",
  sprintf("# R version: %s", R.version.string),
  sprintf("# pROC version: %s", as.character(packageVersion("pROC"))),
  sprintf("# Date: %s", format(Sys.Date())),
  "# Regenerate from the repository root: Rscript tests/reference/generate_peers_pROC.R",
  "# See the comments at the top of that script for the exact pROC calls and conventions.")

write_block <- function(path, df) {
  con <- file(path, open = "w")
  on.exit(close(con))
  writeLines(header, con)
  writeLines(paste(names(df), collapse = ","), con)
  cols <- lapply(df, function(col) if (is.numeric(col)) fmt(col) else as.character(col))
  writeLines(do.call(paste, c(cols, sep = ",")), con)
}

long <- do.call(rbind, lapply(names(datasets), function(nm) {
  d <- datasets[[nm]]
  data.frame(dataset = nm, item = seq_len(nrow(d)), y_true = as.integer(d$y_true),
             score_a = d$score_a, score_b = d$score_b)
}))
write_block(file.path(script_dir, "peers_pROC_data.csv"), long)
write_block(file.path(script_dir, "pauc_pROC.csv"), pauc_df)
write_block(file.path(script_dir, "coords_best_pROC.csv"), best_df)
write_block(file.path(script_dir, "coords_sp_pROC.csv"), sp_df)
write_block(file.path(script_dir, "coords_se_pROC.csv"), se_df)
write_block(file.path(script_dir, "power_pROC.csv"), pw_df)
cat("wrote peers_pROC_data.csv, pauc_pROC.csv, coords_best_pROC.csv, coords_sp_pROC.csv,",
    "coords_se_pROC.csv, power_pROC.csv in", script_dir, "\n")
