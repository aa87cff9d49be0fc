console.log("later: not built yet");
