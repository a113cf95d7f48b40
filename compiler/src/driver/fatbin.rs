//! Fat binaries: one file holding a linked cubin for each of several GPU generations and PTX
//! for the driver to JIT on newer ones, as nvcc's `-gencode arch=compute_XX,code=...` asks,
//! packed by the toolkit's `fatbinary`.
//!
//! Each `code=sm_XX` is a whole link ([`super::link`]) for that architecture; each
//! `code=compute_XX` is the PTX of the one source, compiled for that architecture. The PTX of
//! a program with device launches calls libcudadevrt, so JIT needs it linked (`cuLink*` with
//! libcudadevrt.a), as it does for nvcc's `-rdc` PTX.
//!
//! A link of several inputs has no single PTX. What nvcc 13.5 does there, measured with
//! `launch.cu scale.cu` and `-gencode arch=compute_80,code=sm_80 -gencode
//! arch=compute_90,code=[sm_90,compute_90]`: `nvcc -rdc=true -fatbin` refuses several sources
//! ("A single input file is required"); `nvcc -dlink -fatbin launch.o scale.o` writes the two
//! linked cubins and no PTX, silently; `nvcc -dc` puts each source's own PTX in its object,
//! which only a later link reads. A fat binary with one PTX per source would not load either:
//! the driver JIT-compiles one image of a fat binary, and each source's PTX alone has
//! unresolved symbols. So cdpc does what `nvcc -dlink` does, the linked cubins only, but says
//! so: warning `W0801`, with what to do for PTX.

use super::link::{self, BuildError, Input, LinkOptions, SourceWarnings};
use super::{CompileError, CompileOptions, Emit};
use crate::diag::{Code, Diagnostic};
use crate::target::SmVersion;
use crate::toolchain::{FatbinImage, ToolRun, Toolchain};
use std::path::PathBuf;

/// One image of a fat binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    /// A linked cubin for `sm_XX` (`code=sm_XX`).
    Cubin(SmVersion),
    /// PTX for `compute_XX`, JIT-compiled by the driver (`code=compute_XX`).
    Ptx(SmVersion),
}

impl std::fmt::Display for Image {
    /// nvcc's name of the image: `sm_90` for a cubin, `compute_90` for PTX.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Image::Cubin(sm) => write!(f, "{sm}"),
            Image::Ptx(sm) => write!(f, "compute_{}", sm.code()),
        }
    }
}

impl Image {
    /// The architecture the image is for.
    pub fn sm(self) -> SmVersion {
        match self {
            Image::Cubin(sm) | Image::Ptx(sm) => sm,
        }
    }
}

/// The architectures of `images`, each once, in their order.
pub fn architectures(images: &[Image]) -> Vec<SmVersion> {
    let mut archs: Vec<SmVersion> = Vec::new();
    for sm in images.iter().map(|i| i.sm()) {
        if !archs.contains(&sm) {
            archs.push(sm);
        }
    }
    archs
}

/// Reads one `-gencode` value: `arch=compute_XX,code=sm_XX`, `code=compute_XX`, or a list
/// `code=[sm_XX,compute_XX]` (also in quotes, as nvcc takes it). `arch` must be the virtual
/// architecture of every `code`: cdpc compiles each target from the source.
pub fn parse_gencode(text: &str) -> Result<Vec<Image>, String> {
    let (arch, code) = match text.split_once(",code=") {
        Some((arch, code)) => (arch.strip_prefix("arch=").unwrap_or(arch), code),
        None => return Err(format!("`{text}` is no -gencode value: write `arch=compute_90,code=sm_90` or `code=[sm_90,compute_90]`")),
    };
    let Some(virtual_arch) = arch.strip_prefix("compute_") else {
        return Err(format!("`arch={arch}` in -gencode names a virtual architecture: `compute_XX`"));
    };
    let virtual_arch: SmVersion = virtual_arch.parse()?;
    let list = code.trim_matches(|c| matches!(c, '[' | ']' | '"' | '\''));
    let mut images = Vec::new();
    for item in list.split(',').map(str::trim) {
        let image = if let Some(sm) = item.strip_prefix("sm_") {
            Image::Cubin(sm.parse()?)
        } else if let Some(sm) = item.strip_prefix("compute_") {
            Image::Ptx(sm.parse()?)
        } else {
            return Err(format!("`code={item}` in -gencode is neither `sm_XX` nor `compute_XX`"));
        };
        let sm = image.sm();
        if sm.number < virtual_arch.number || (sm.arch_specific && !virtual_arch.arch_specific) || (matches!(image, Image::Ptx(_)) && sm != virtual_arch) {
            return Err(format!("`{item}` cannot be built from `compute_{}`", virtual_arch.code()));
        }
        images.push(image);
    }
    Ok(images)
}

/// nvcc's `-arch=all` (`major_only`: `-arch=all-major`) over the architectures `supported`
/// (the toolkit's that LLVM writes, [`crate::toolchain::ptxas_architectures`]), as nvcc 13.5
/// builds them (`nvcc -dryrun`): a cubin of each (`all-major`: of each `sm_X0` and of the
/// oldest), then the PTX of the newest `sm_X0`, for the driver to JIT on GPUs after them.
pub fn all_images(supported: &[SmVersion], major_only: bool) -> Vec<Image> {
    let mut archs: Vec<SmVersion> = supported.iter().copied().filter(|sm| !sm.arch_specific).collect();
    archs.sort_by_key(|sm| sm.number);
    archs.dedup();
    let oldest = archs.first().copied();
    let mut images: Vec<Image> = archs.iter().filter(|sm| !major_only || sm.number % 10 == 0 || Some(**sm) == oldest).map(|sm| Image::Cubin(*sm)).collect();
    if let Some(newest_major) = archs.iter().rev().find(|sm| sm.number % 10 == 0) {
        images.push(Image::Ptx(*newest_major));
    }
    images
}

/// nvcc's `-arch=native`: a cubin for each of the GPUs' compute capabilities `gpus` (`90` for
/// 9.0) that `supported` holds, no PTX; empty where none is.
pub fn native_images(supported: &[SmVersion], gpus: &[u32]) -> Vec<Image> {
    gpus.iter().filter_map(|n| supported.iter().find(|sm| sm.number == *n && !sm.arch_specific)).map(|sm| Image::Cubin(*sm)).collect()
}

/// A finished fat binary.
pub struct Fatbin {
    /// The bytes of the `.fatbin` file.
    pub bytes: Vec<u8>,
    /// Each source's warnings (from the first image's compilation), in input order.
    pub warnings: Vec<SourceWarnings>,
    /// Every ptxas, nvlink and fatbinary run.
    pub tool_runs: Vec<ToolRun>,
    /// With [`CompileOptions::list_headers`] and one source, the headers its compilation read
    /// (`-MD`); empty otherwise.
    pub headers: Vec<PathBuf>,
}

/// Builds `images` from `inputs` and packs them with `fatbinary`.
pub fn fatbin(inputs: &[Input], link_options: &LinkOptions, images: &[Image], options: &CompileOptions) -> Result<Fatbin, BuildError> {
    if images.is_empty() {
        return Err(CompileError::Usage("a fat binary needs at least one -gencode target".into()).into());
    }
    let tools = Toolchain::discover(&options.tools).map_err(CompileError::from)?;
    let mut packed = Vec::new();
    let mut warnings = None;
    let mut tool_runs = Vec::new();
    let mut seen = Vec::new();
    let mut headers: Option<Vec<PathBuf>> = None;
    let linked = !matches!(inputs, [Input::Source(_)]);
    let dropped: Vec<SmVersion> = images
        .iter()
        .filter_map(|i| match i {
            Image::Ptx(sm) if linked => Some(*sm),
            _ => None,
        })
        .collect();
    if linked && dropped.len() == images.len() {
        return Err(
            CompileError::Usage(format!("`code=compute_{}` embeds the PTX of one source; a link of several inputs has no PTX: add `code=sm_XX` for the linked cubins", dropped[0].code())).into()
        );
    }
    for &image in images {
        if seen.contains(&image) {
            continue;
        }
        seen.push(image);
        let mut options = CompileOptions { emit: Emit::Cubin, ..options.clone() };
        match image {
            Image::Cubin(sm) => {
                options.target.sm = sm;
                let linked = link::link(inputs, link_options, &options)?;
                headers.get_or_insert(linked.headers);
                warnings.get_or_insert(linked.warnings);
                tool_runs.extend(linked.tool_runs);
                packed.push(FatbinImage { ptx: false, sm, bytes: linked.cubin });
            }
            Image::Ptx(sm) => {
                let [Input::Source(path)] = inputs else { continue };
                options.target.sm = sm;
                options.emit = Emit::Ptx;
                let name = path.display().to_string();
                options.preprocess.input = Some(path.clone());
                let input = super::InputFile::read(path, &options).map_err(|error| BuildError::Source { name: name.clone(), text: String::new(), error })?;
                let compiled = input.compile(&options).map_err(|error| BuildError::Source { name, text: input.shown.clone(), error })?;
                headers.get_or_insert(compiled.headers);
                packed.push(FatbinImage { ptx: true, sm, bytes: compiled.output });
            }
        }
    }
    let mut warnings = warnings.unwrap_or_default();
    if !dropped.is_empty() {
        let list: Vec<String> = dropped.iter().map(|sm| format!("`code=compute_{}`", sm.code())).collect();
        let d = Diagnostic::new(
            Code::PtxOfLinkNotPacked,
            Default::default(),
            format!("{} adds no PTX to the fat binary of a link of several inputs: it holds the linked cubins only, as `nvcc -dlink` writes it", list.join(", ")),
        )
        .with_note("PTX is per source, and the driver JIT-compiles one image of a fat binary: each source's PTX alone has unresolved symbols")
        .with_note("for PTX to JIT, compile one source (`cdpc app.cu -gencode arch=compute_90,code=[sm_90,compute_90]`) or write each source's PTX (`cdpc --emit ptx`) and link them with `cuLink*` and libcudadevrt");
        let mut d = options.warnings.apply(vec![d]);
        d.iter_mut().for_each(|d| d.labels.clear());
        if d.iter().any(Diagnostic::is_error) {
            return Err(BuildError::Link(d));
        }
        warnings.push(SourceWarnings { name: "<link>".into(), text: String::new(), warnings: d });
    }
    let build = super::build_options(options);
    let bytes = tools.fatbinary(&packed, false, &build).map_err(CompileError::from)?;
    tool_runs.extend(build.log.take());
    let headers = headers.unwrap_or_default();
    Ok(Fatbin { bytes, warnings, tool_runs, headers })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The images `nvcc -arch=all` and `-arch=all-major` asked fatbinary for (`nvcc -dryrun`,
    /// CUDA 13.5), over the architectures of that toolkit's ptxas that LLVM 22 writes (no sm_107).
    #[test]
    fn all_and_all_major_are_nvccs_images() {
        let supported: Vec<SmVersion> = [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121].into_iter().map(SmVersion).collect();
        let cubins = |images: &[Image]| images.iter().filter_map(|i| if let Image::Cubin(s) = i { Some(s.number) } else { None }).collect::<Vec<_>>();
        let ptx = |images: &[Image]| images.iter().filter_map(|i| if let Image::Ptx(s) = i { Some(s.number) } else { None }).collect::<Vec<_>>();
        let all = all_images(&supported, false);
        assert_eq!(cubins(&all), [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121]);
        assert_eq!(ptx(&all), [120]);
        let major = all_images(&supported, true);
        assert_eq!(cubins(&major), [75, 80, 90, 100, 110, 120]);
        assert_eq!(ptx(&major), [120]);
        // A GPU the toolkit does not build for (sm_61) is left out.
        assert_eq!(native_images(&supported, &[90, 61, 80]), [Image::Cubin(SmVersion(90)), Image::Cubin(SmVersion(80))]);
    }

    #[test]
    fn gencode_values_as_nvcc_writes_them() {
        assert_eq!(parse_gencode("arch=compute_80,code=sm_80"), Ok(vec![Image::Cubin(SmVersion(80))]));
        assert_eq!(parse_gencode("arch=compute_90,code=[sm_90,compute_90]"), Ok(vec![Image::Cubin(SmVersion(90)), Image::Ptx(SmVersion(90))]));
        assert_eq!(parse_gencode("arch=compute_90,code=\"sm_90,sm_100\""), Ok(vec![Image::Cubin(SmVersion(90)), Image::Cubin(SmVersion(100))]));
        assert!(parse_gencode("arch=sm_90,code=sm_90").unwrap_err().contains("virtual architecture"));
        assert!(parse_gencode("arch=compute_90,code=sm_80").unwrap_err().contains("cannot be built"));
        assert!(parse_gencode("arch=compute_90,code=compute_100").is_err());
        assert!(parse_gencode("sm_90").is_err());
        assert!(parse_gencode("arch=compute_90,code=lto_90").is_err());
    }
}
