# Reference values from base R (+ epiR) for proportion intervals, multiplicity, stratified 2x2
# tables and logistic recalibration.
#
# Regenerate (from the repository root):
#     Rscript tests/reference/generate_peers_R.R
#
# Writes, next to this script:
#   proportions_R.csv     binom.test (Clopper-Pearson), prop.test(correct = FALSE) (Wilson) and
#                         the Agresti-Coull interval written out from its formula (unclipped);
#   multiplicity_R.csv    p.adjust "hochberg" and "hommel", and Sidak / Holm-Sidak written out;
#   contingency_R.csv     mantelhaen.test (estimate, conf.int, statistic, p.value, with and
#                         without continuity correction) and epiR::epi.2by2's Breslow-Day
#                         statistic (massoc.detail$bOR.homog);
#   recalibration_R.csv   glm(y ~ x, binomial) and glm(y ~ 1, offset = x, binomial) with
#                         x = qlogis(p): coefficients, standard errors and confint.default;
#   recalibration_R_data.csv  the inputs of those fits.
# Numbers are written with sprintf("%.17g") (exact round trip, checked).

suppressPackageStartupMessages(library(epiR))
RNGkind(kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")

script_dir <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  if (length(arg) == 1) dirname(normalizePath(sub("^--file=", "", arg))) else "tests/reference"
})

fmt <- function(x) {
  out <- sprintf("%.17g", x)
  out[is.na(x)] <- "NA"
  ok <- is.finite(x)
  stopifnot(identical(as.numeric(out[ok]), as.numeric(x[ok])))
  out
}

# ------------------------------------------------------------------------ proportions
cases <- expand.grid(k_n = c("0/10", "1/10", "9/10", "10/10", "18/20", "45/50", "3/7",
                             "570/600", "1/1"), level = c(0.9, 0.95, 0.99),
                     stringsAsFactors = FALSE)
prop_rows <- lapply(seq_len(nrow(cases)), function(i) {
  kn <- as.integer(strsplit(cases$k_n[i], "/")[[1]])
  k <- kn[1]; n <- kn[2]; lv <- cases$level[i]
  cp <- binom.test(k, n, conf.level = lv)$conf.int
  wi <- suppressWarnings(prop.test(k, n, conf.level = lv, correct = FALSE)$conf.int)
  z <- qnorm(1 - (1 - lv) / 2)
  nt <- n + z^2
  pt <- (k + z^2 / 2) / nt
  ac <- pt + c(-1, 1) * z * sqrt(pt * (1 - pt) / nt)
  data.frame(count = k, nobs = n, level = lv, cp_low = cp[1], cp_high = cp[2],
             wilson_low = wi[1], wilson_high = wi[2], ac_low = ac[1], ac_high = ac[2])
})
prop_df <- do.call(rbind, prop_rows)

# ----------------------------------------------------------------------- multiplicity
set.seed(11)
families <- list(
  hand = c(0.01, 0.04, 0.03, 0.005, 0.5),
  ties = c(0.02, 0.02, 0.02, 0.2, 0.04, 0.04),
  random = round(runif(12)^2, 4),
  tiny = c(1e-10, 2e-8, 0.03, 0.9))
mult_rows <- list()
for (nm in names(families)) {
  p <- families[[nm]]
  m <- length(p)
  sidak <- 1 - (1 - p)^m
  o <- order(p)
  hs <- numeric(m)
  run <- 0
  for (j in seq_along(o)) {  # step-down: max over earlier steps of 1 - (1 - p_(j))^(m - j + 1)
    run <- max(run, 1 - (1 - p[o[j]])^(m - j + 1))
    hs[o[j]] <- min(run, 1)
  }
  mult_rows[[nm]] <- data.frame(family = nm, index = seq_len(m), p = p,
                                hochberg = p.adjust(p, "hochberg"),
                                hommel = p.adjust(p, "hommel"), sidak = sidak, holm_sidak = hs)
}
mult_df <- do.call(rbind, mult_rows)

# ------------------------------------------------------------------------ contingency
strata_sets <- list(
  three = c(10, 3, 5, 12, 8, 4, 4, 9, 2, 6, 8, 3),   # column-major per 2x2: a, c, b, d
  homogeneous = c(20, 10, 10, 20, 15, 8, 7, 16, 30, 14, 16, 28, 9, 5, 4, 10),
  with_zero = c(5, 0, 3, 6, 7, 2, 2, 9))
cont_rows <- lapply(names(strata_sets), function(nm) {
  v <- strata_sets[[nm]]
  tab <- array(v, dim = c(2, 2, length(v) / 4))
  mh1 <- mantelhaen.test(tab, correct = TRUE)
  mh0 <- mantelhaen.test(tab, correct = FALSE)
  bd <- suppressWarnings(epi.2by2(tab, method = "cohort.count")$massoc.detail$bOR.homog)
  data.frame(set = nm, cells = paste(v, collapse = " "), k = dim(tab)[3],
             mh_estimate = unname(mh1$estimate), mh_ci_low = mh1$conf.int[1],
             mh_ci_high = mh1$conf.int[2], cmh_stat_corrected = unname(mh1$statistic),
             cmh_p_corrected = mh1$p.value, cmh_stat = unname(mh0$statistic),
             cmh_p = mh0$p.value, bd_stat = bd$test.statistic, bd_df = bd$df,
             bd_p = bd$p.value)
})
cont_df <- do.call(rbind, cont_rows)

# ---------------------------------------------------------------------- recalibration
set.seed(20261201)
recal_data <- list()
local({
  n <- 300
  p <- runif(n, 0.02, 0.98)
  y <- rbinom(n, 1, plogis(0.4 + 0.7 * qlogis(p)))
  recal_data$overconfident <<- data.frame(y = y, p = p)
  n <- 120
  p <- round(runif(n, 0.05, 0.95), 2)
  y <- rbinom(n, 1, plogis(-0.3 + 1.4 * qlogis(p)))
  recal_data$underconfident <<- data.frame(y = y, p = p)
})
recal_rows <- lapply(names(recal_data), function(nm) {
  d <- recal_data[[nm]]
  x <- qlogis(d$p)
  f1 <- glm(d$y ~ x, family = binomial, control = glm.control(epsilon = 1e-14, maxit = 100))
  f2 <- glm(d$y ~ 1, offset = x, family = binomial,
            control = glm.control(epsilon = 1e-14, maxit = 100))
  c1 <- confint.default(f1)
  c2 <- confint.default(f2)
  s1 <- summary(f1)$coefficients
  s2 <- summary(f2)$coefficients
  data.frame(dataset = nm, slope = s1[2, 1], slope_se = s1[2, 2], slope_low = c1[2, 1],
             slope_high = c1[2, 2], intercept_joint = s1[1, 1], intercept_joint_se = s1[1, 2],
             intercept_joint_low = c1[1, 1], intercept_joint_high = c1[1, 2],
             intercept = s2[1, 1], intercept_se = s2[1, 2], intercept_low = c2[1, 1],
             intercept_high = c2[1, 2])
})
recal_df <- do.call(rbind, recal_rows)
recal_long <- do.call(rbind, lapply(names(recal_data), function(nm) {
  d <- recal_data[[nm]]
  data.frame(dataset = nm, item = seq_len(nrow(d)), y_true = d$y, y_prob = d$p)
}))

# ---------------------------------------------------------------------------- output
header <- c(
  "# Reference values produced by R (stats; epiR for Breslow-Day); do not edit by hand.",
  sprintf("# R version: %s", R.version.string),
  sprintf("# epiR version: %s", as.character(packageVersion("epiR"))),
  sprintf("# Date: %s", format(Sys.Date())),
  "# Regenerate from the repository root: Rscript tests/reference/generate_peers_R.R")

write_block <- function(path, df) {
  con <- file(path, open = "w")
  on.exit(close(con))
  writeLines(header, con)
  writeLines(paste(names(df), collapse = ","), con)
  cols <- lapply(df, function(col) if (is.numeric(col)) fmt(col) else as.character(col))
  writeLines(do.call(paste, c(cols, sep = ",")), con)
}
write_block(file.path(script_dir, "proportions_R.csv"), prop_df)
write_block(file.path(script_dir, "multiplicity_R.csv"), mult_df)
write_block(file.path(script_dir, "contingency_R.csv"), cont_df)
write_block(file.path(script_dir, "recalibration_R.csv"), recal_df)
write_block(file.path(script_dir, "recalibration_R_data.csv"), recal_long)
cat("wrote proportions_R.csv, multiplicity_R.csv, contingency_R.csv, recalibration_R.csv,",
    "recalibration_R_data.csv in", script_dir, "\n")
